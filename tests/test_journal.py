"""The log as an operator reads it: at INFO, lifecycle and every decision, no polls or access lines, one
timestamp per line; the level given before the command holds for the fleet and its agents."""

import re
import signal
from pathlib import Path

import httpx
import pytest

from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import SettingsFactory
from tests.helpers.a2a_wire import rpc, user_message
from tests.helpers.fleet_process import FleetProcess, agent_config, running, wait_until

pytestmark = pytest.mark.slow

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}")
DENIED = '[[tool:bash {"command": "ls -la && rm -rf build", "description": "clean"}]] clean up'
SHIELD = {"defaults": {"read": "allow", "execute": "deny", "delete": "deny"}}


async def test_info_is_lifecycle_and_decisions_without_polls(
    make_settings: SettingsFactory, offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    agent_config(tmp_path / "agents", "journal", make_settings(), auto_approve=False, shield=SHIELD)
    fleet = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    try:
        listed = await wait_until(http, fleet, running("journal"))
        await rpc(http, listed["journal"]["url"] + "/a2a/jsonrpc", "SendMessage", {"message": user_message(DENIED)})
        decision = await fleet.wait_for_line(r"\[journal\] deny bash \(delete\)", timeout=30)
        for _ in range(3):  # a few rounds of the registry's health polls, each also an access line in the agent
            await http.get(listed["journal"]["url"] + "/health")
            await http.get(fleet.registry + "/agents")
    finally:
        assert await fleet.stop(signal.SIGINT) == 0, fleet.log()
    assert "ls -la && rm -rf build" in decision and "rule default:" in decision and "decided by rules" in decision
    assert " INFO " in decision
    lines = fleet.lines
    assert not [line for line in lines if '"GET ' in line or "HTTP Request" in line]  # access lines, health polls
    assert not [line for line in lines if "CTRL+C" in line or "Uvicorn running" in line]
    assert [line for line in lines if len(TIMESTAMP.findall(line)) > 1] == []  # an agent's line: the fleet's stamp
    assert not [line for line in lines if re.search(r"\b(INFO|WARNING) +\S+: \[journal\] (INFO|WARNING) ", line)]
    assert [line for line in lines if "clean up" in line] == []  # never message content


async def test_the_level_before_the_command_holds_for_the_fleet_and_its_agents(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    agent_config(tmp_path / "agents", "quiet", make_settings())
    fleet = await FleetProcess.start("--log-level", "warning", "fleet", str(tmp_path / "agents"))
    try:
        await wait_until(http, fleet, running("quiet"))
    finally:
        assert await fleet.stop(signal.SIGINT) == 0, fleet.log()
    assert [line for line in fleet.lines if " INFO " in line] == []
