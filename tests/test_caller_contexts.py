"""Contexts belong to their caller: another caller's contextId reaches none of her session, rules or approvals.

Real OpenCode on the offline model, two callers with their own keys: `[[turns]]` shows whose conversation a
turn continued, a `touch` in the workspace shows whether a command ran.
"""

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import ShieldConfig
from a2a_wrapper.state.audit import recent
from a2a_wrapper.state.sessions import ContextKey
from tests.conftest import SettingsFactory, serving
from tests.helpers.a2a_wire import answer_text, approval_of, final_state, rpc, stream, user_message
from tests.helpers.auth import bearer
from tests.helpers.tool_messages import answer_params, bash_params

KEYS = {"ALICE_KEY": "alice-key-3e81b0", "BOB_KEY": "bob-key-c47d19"}
PEOPLE = {"callers": [{"name": "alice", "key_env": "ALICE_KEY"}, {"name": "bob", "key_env": "BOB_KEY"}]}
TOUCH = "touch shared.txt"
COMPLETED, ASKED = "TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"
NOT_FOUND = -32001


@pytest.fixture
def people(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
async def alice() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60, headers=bearer(KEYS["ALICE_KEY"])) as client:
        yield client


@pytest.fixture
async def bob() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60, headers=bearer(KEYS["BOB_KEY"])) as client:
        yield client


@pytest.fixture
def settings(make_settings: SettingsFactory, people: None) -> AgentSettings:
    return make_settings(shield=ShieldConfig(), auth=PEOPLE)  # every command asks


def turns(context_id: str | None = None) -> dict[str, Any]:
    return {"message": user_message("[[turns]]", context_id)}


async def count(client: httpx.AsyncClient, url: str, context_id: str | None = None) -> tuple[int, str]:
    """How many user messages the conversation behind this turn holds, and its context."""
    events = await stream(client, url, turns(context_id))
    assert final_state(events) == COMPLETED, events
    text = answer_text(events)
    found = re.search(r"This conversation holds (\d+) user messages", text)
    assert found, text
    return int(found.group(1)), events[0]["task"]["contextId"]


async def always(client: httpx.AsyncClient, url: str, command: str, context_id: str) -> None:
    """Runs `command` in the context, answering its approval with "always"."""
    asked = await stream(client, url, bash_params(command, context_id))
    assert final_state(asked) == ASKED, asked
    assert final_state(await stream(client, url, answer_params(asked[0]["task"], "always"))) == COMPLETED


def audited(settings: AgentSettings, caller: str) -> list[tuple[str, str]]:
    assert settings.state_dir is not None
    entries = reversed(recent(settings.state_dir / "state.db", 100))
    return [(e.decision, e.rule) for e in entries if e.caller == caller and e.target == TOUCH]


@pytest.mark.slow
async def test_another_callers_context_id_opens_a_fresh_session_without_her_always(
    settings: AgentSettings, offline_model: OfflineModel, alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    async with serving(settings, offline_model) as served:
        shared = served.workdir / "shared.txt"
        _, context = await count(alice, served.jsonrpc)
        assert (await count(alice, served.jsonrpc, context))[0] == 2
        await always(alice, served.jsonrpc, TOUCH, context)
        shared.unlink()

        assert (await count(bob, served.jsonrpc, context))[0] == 1, "bob starts his own conversation, not hers"
        probe = await stream(bob, served.jsonrpc, bash_params(TOUCH, context))
        assert final_state(probe) == ASKED, "her always is not his"
        assert not shared.exists()
        assert final_state(await stream(bob, served.jsonrpc, answer_params(probe[0]["task"], "no"))) == COMPLETED
        assert not shared.exists()
        assert (await count(alice, served.jsonrpc, context))[0] == 4, "hers goes on where she left it"

    async with serving(settings, offline_model) as served:  # both conversations and her rule outlive a restart
        assert (await count(bob, served.jsonrpc, context))[0] == 3
        assert (await count(alice, served.jsonrpc, context))[0] == 5
        assert final_state(await stream(bob, served.jsonrpc, bash_params(TOUCH, context))) == ASKED
        assert not shared.exists()
        assert final_state(await stream(alice, served.jsonrpc, bash_params(TOUCH, context))) == COMPLETED
        assert shared.exists()

    assert audited(settings, "alice") == [("allow", "person:alice"), ("allow", "context:always-1")]
    assert audited(settings, "bob") == [("deny", "person:bob")]


@pytest.mark.slow
async def test_bob_can_neither_answer_her_waiting_approval_nor_wait_behind_it(
    settings: AgentSettings, offline_model: OfflineModel, alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    async with serving(settings, offline_model) as served:
        _, context = await count(alice, served.jsonrpc)
        asked = await stream(alice, served.jsonrpc, bash_params(TOUCH, context))
        task, approval = asked[0]["task"], approval_of(asked)
        for method, params in [
            ("SendMessage", answer_params(task, "yes")),
            ("SendMessage", answer_params(task, data={"approval": approval["id"], "option": "allow_context"})),
            ("GetTask", {"id": task["id"]}),
            ("CancelTask", {"id": task["id"]}),
        ]:
            refused = await rpc(bob, served.jsonrpc, method, params)
            assert refused.get("error", {}).get("code") == NOT_FOUND, (method, refused)

        async with asyncio.timeout(60):  # her turn holds her context, not his
            assert (await count(bob, served.jsonrpc, context))[0] == 1
        assert not (served.workdir / "shared.txt").exists()
        assert (await rpc(alice, served.jsonrpc, "GetTask", {"id": task["id"]}))["result"]["status"]["state"] == ASKED

        assert final_state(await stream(alice, served.jsonrpc, answer_params(task, "yes"))) == COMPLETED
        assert (served.workdir / "shared.txt").exists()
    assert audited(settings, "alice") == [("allow", "person:alice")]
    assert audited(settings, "bob") == []


def as_an_older_version_left_it(database: Path) -> None:
    """The session map and the context rules in the layout of versions before callers: by context id alone."""
    with sqlite3.connect(database) as db:
        db.executescript(
            """
            CREATE TABLE older_sessions AS
                SELECT context_id, backend, session_id, created_at, last_used FROM context_sessions ORDER BY rowid;
            CREATE TABLE older_rules AS SELECT context_id, rule FROM context_rules ORDER BY rowid;
            DROP TABLE context_sessions;
            DROP TABLE context_rules;
            CREATE TABLE context_sessions (
                context_id TEXT PRIMARY KEY,
                backend TEXT NOT NULL,
                session_id TEXT NOT NULL,
                created_at REAL NOT NULL,
                last_used REAL NOT NULL
            );
            CREATE TABLE context_rules (context_id TEXT NOT NULL, rule TEXT NOT NULL);
            INSERT INTO context_sessions SELECT * FROM older_sessions;
            INSERT INTO context_rules SELECT * FROM older_rules;
            DROP TABLE older_sessions;
            DROP TABLE older_rules;
            """
        )


@pytest.mark.slow
async def test_a_state_file_of_an_older_version_keeps_each_context_with_its_caller(
    settings: AgentSettings, offline_model: OfflineModel, alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    async with serving(settings, offline_model) as served:
        _, hers = await count(alice, served.jsonrpc)
        await always(alice, served.jsonrpc, TOUCH, hers)
        _, his = await count(bob, served.jsonrpc)
        (served.workdir / "shared.txt").unlink()
    assert settings.state_dir is not None
    as_an_older_version_left_it(settings.state_dir / "state.db")

    async with serving(settings, offline_model) as served:
        assert (await count(alice, served.jsonrpc, hers))[0] == 3, "her session is kept"
        assert (await count(bob, served.jsonrpc, his))[0] == 2, "his session is kept"
        assert (await count(bob, served.jsonrpc, hers))[0] == 1, "her context is not his"
        assert final_state(await stream(bob, served.jsonrpc, bash_params(TOUCH, hers))) == ASKED
        assert not (served.workdir / "shared.txt").exists()
        assert final_state(await stream(alice, served.jsonrpc, bash_params(TOUCH, hers))) == COMPLETED, (
            "her rule is kept"
        )
        assert (served.workdir / "shared.txt").exists()


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (ContextKey("alice", "ctx"), ContextKey("bob", "ctx")),
        (ContextKey("", "alice/ctx"), ContextKey("alice", "ctx")),  # an anonymous id shaped like a caller's key
        (ContextKey("", "ctx"), ContextKey("alice", "ctx")),
    ],
)
def test_two_callers_contexts_never_share_a_backend_key(one: ContextKey, other: ContextKey) -> None:
    assert one.backend_key != other.backend_key  # Copilot derives its session id from it
