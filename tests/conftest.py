"""Fixtures: the real offline model, real OpenCode agents served by uvicorn on free loopback ports."""

import asyncio
import gc
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper import event_loop
from a2a_wrapper.agent import RunningAgent, running_agent
from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import ModelProvider, OpenCodeSettings
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import MODEL_ID, SMALL_MODEL_ID, OfflineModel
from tests.helpers.compose_fleet import Fleet, running_fleet
from tests.helpers.postgres import PostgresServer, postgres_for_tests
from tests.helpers.served_app import served_app

# The suite's agents work in place (as before per-task workspaces were the default): their tests look at the
# workdir after a turn. The tests of per-task workspaces (test_workspaces*.py) take this away for their agents.
os.environ.setdefault("A2A_WRAP_WORKSPACE__MODE", "in_place")


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Async tests run on the loop a2a-wrap runs on; those marked `both_loops` on asyncio's own as well."""
    if item.get_closest_marker("both_loops"):
        return {"asyncio": asyncio.new_event_loop, "a2a-wrap's": event_loop.new_event_loop}
    return {"a2a-wrap's": event_loop.new_event_loop}


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(call: pytest.CallInfo[None]) -> Iterator[None]:
    """No garbage collection while a failure's report is made. pytest parses the test's source to show a failure
    (an expected one too); on CPython 3.11 before 3.11.9, finalizers the collector runs inside `ast.parse`
    (a2a-sdk leaves unawaited coroutines) can break it with "AST constructor recursion depth mismatch", which
    ends the whole run with an INTERNALERROR. Garbage is collected just before, instead."""
    failing = call.excinfo is not None
    if failing:
        gc.collect()
        gc.disable()
    try:
        yield
    finally:
        if failing:
            gc.enable()


@pytest.fixture(scope="session")
def opencode_binary() -> Path:
    return find_binary("opencode")  # CI installs it with `a2a-wrap backends install`


@pytest.fixture(scope="session")
async def offline_model() -> AsyncIterator[OfflineModel]:
    async with OfflineModel() as model:
        yield model


@dataclass
class ServedAgent:
    url: str
    agent: RunningAgent
    model: OfflineModel

    @property
    def jsonrpc(self) -> str:
        return self.url + "/a2a/jsonrpc"

    @property
    def rest(self) -> str:
        return self.url + "/a2a/rest"

    @property
    def workdir(self) -> Path:
        return self.agent.settings.backend.workdir


SettingsFactory = Callable[..., AgentSettings]


@pytest.fixture
def make_settings(tmp_path: Path, offline_model: OfflineModel, opencode_binary: Path) -> SettingsFactory:
    def make(state_dir: Path | None = None, **fields: Any) -> AgentSettings:
        state = state_dir or tmp_path / "state"
        backend = {
            "binary": opencode_binary,
            "workdir": state / "workspace",
            "model": f"offline/{MODEL_ID}",
            "provider": ModelProvider(id="offline", base_url=offline_model.base_url, models=[MODEL_ID, SMALL_MODEL_ID]),
            **fields.pop("backend", {}),
        }
        return AgentSettings(
            card=CardSettings(name=fields.pop("name", "test-agent")),
            server=ServerSettings(port=free_port(), **fields.pop("server", {})),
            backend=OpenCodeSettings(**backend),
            state_dir=state,
            **fields,
        )

    return make


@asynccontextmanager
async def serving(settings: AgentSettings, model: OfflineModel) -> AsyncIterator[ServedAgent]:
    """The agent on a real uvicorn port, stopped on exit."""
    async with running_agent(settings) as agent, served_app(agent.app, settings.server):
        yield ServedAgent(settings.advertised_url, agent, model)


@pytest.fixture
async def agent(make_settings: SettingsFactory, offline_model: OfflineModel) -> AsyncIterator[ServedAgent]:
    """A fresh agent that allows every tool call."""
    async with serving(make_settings(auto_approve=True), offline_model) as served:
        yield served


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as client:
        yield client


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One real PostgreSQL for the whole run (tests/helpers/postgres.py), stopped at its end."""
    with postgres_for_tests() as server:
        yield server


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    """A fresh, empty database on the run's PostgreSQL."""
    return postgres.new_database()


@pytest.fixture(scope="session")
def compose_fleet() -> Iterator[Fleet]:
    """The compose fleet (compose/docker-compose.yml) up once for the run: bringing it up takes minutes."""
    with running_fleet() as fleet:
        yield fleet
