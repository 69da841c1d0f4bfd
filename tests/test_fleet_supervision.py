"""`a2a-wrap fleet` supervising real agents: crashes restarted with backoff, fatal after too many, clean stops."""

import asyncio
import contextlib
import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest
import yaml

from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import SettingsFactory
from tests.helpers.a2a_wire import rpc, status_text, stream, user_message
from tests.helpers.fleet_process import (
    FleetProcess,
    agent_config,
    alive,
    backend_pid,
    processes_under,
    running,
    wait_until,
)
from tests.helpers.model_prompts import marker, wait_until_the_model_receives

pytestmark = pytest.mark.slow


async def test_a_killed_agent_is_restarted_and_the_registry_follows(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    settings = make_settings()
    agent_config(tmp_path / "agents", "alpha", settings)
    agent_config(tmp_path / "agents", "beta", settings, logging={"level": "WARNING"})  # quiet: no INFO lines
    fleet = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    try:
        before = await wait_until(http, fleet, running("alpha", "beta"))
        os.kill(before["alpha"]["pid"], signal.SIGKILL)
        seen = await wait_until(http, fleet, lambda listed: listed["alpha"]["state"] in ("backoff", "starting"))
        assert f"pid {before['alpha']['pid']} exited with code -9" in seen["alpha"]["last_exit"]
        after = await wait_until(http, fleet, lambda listed: running("alpha")(listed) and listed["alpha"]["restarts"])
        assert after["alpha"]["restarts"] == 1
        assert after["alpha"]["pid"] != before["alpha"]["pid"]
        assert after["beta"]["pid"] == before["beta"]["pid"], "the other agent is left alone"
        assert after["beta"]["restarts"] == 0
        assert not alive(backend_pid(before["alpha"])), "the killed agent's OpenCode died with it"
        await fleet.wait_for_line(r"\[alpha\] pid \d+ exited with code -9; .*; restarting in 1\.0 s")
    finally:
        assert await fleet.stop() == 0, fleet.log()
    assert processes_under(tmp_path) == []


def crashing_binary(folder: Path) -> Path:
    script = folder / "crash.sh"
    script.write_text("#!/bin/sh\necho 'crash.sh: giving up at once' >&2\nexit 3\n")
    script.chmod(0o755)
    return script


async def test_an_agent_that_keeps_crashing_turns_fatal_and_the_others_keep_running(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    settings = make_settings()
    steady = agent_config(tmp_path / "agents", "steady", settings)
    broken = agent_config(tmp_path / "agents", "broken", settings, binary=crashing_binary(tmp_path))
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(
        yaml.safe_dump(
            {
                "restart": {"backoff": 0.2, "max_crashes": 2, "window": 120},
                "agents": [{"config": str(config.relative_to(tmp_path))} for config in (steady, broken)],
            }
        )
    )
    fleet = await FleetProcess.start("fleet", str(fleet_file))
    try:
        listed = await wait_until(
            http, fleet, lambda listed: listed["broken"]["state"] == "fatal" and running("steady")(listed)
        )
        assert listed["broken"]["restarts"] == 2, "two restarts, then the third crash is one too many"
        assert "crash.sh: giving up at once" in listed["broken"]["last_exit"]
        assert listed["broken"]["pid"] is None
        await fleet.wait_for_line(r"\[broken\] fatal: it crashed 3 times within 120 s; not restarting")
        await asyncio.sleep(1)
        assert (await http.get(listed["steady"]["url"] + "/health")).status_code == 200
    finally:
        assert await fleet.stop(signal.SIGINT) == 0, fleet.log()
    assert processes_under(tmp_path) == []


async def test_sigint_stops_every_agent_and_its_backend(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    settings = make_settings()
    configs = [agent_config(tmp_path / "agents", name, settings) for name in ("one", "two")]
    fleet = await FleetProcess.start("fleet", *map(str, configs))
    try:
        listed = await wait_until(http, fleet, running("one", "two"))
    finally:
        assert await fleet.stop(signal.SIGINT) == 0, fleet.log()
    pids = [fleet.process.pid] + [agent["pid"] for agent in listed.values()] + list(map(backend_pid, listed.values()))
    assert len(set(pids)) == 5
    assert [pid for pid in pids if alive(pid)] == []
    assert processes_under(tmp_path) == []
    await fleet.wait_for_line(r"\[one\] stopped \(pid \d+\)", timeout=1)


async def test_a_running_turn_ends_failed_with_a_sentence_when_the_fleet_stops(
    make_settings: SettingsFactory, offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    config = agent_config(tmp_path / "agents", "busy", make_settings())
    fleet = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    listed = await wait_until(http, fleet, running("busy"))
    url = listed["busy"]["url"]
    cut_short = marker("cut-short")
    params = {"message": user_message(f"[[slow:60]] {cut_short}"), "configuration": {"returnImmediately": True}}
    task = (await rpc(http, url + "/a2a/jsonrpc", "SendMessage", params))["result"]["task"]
    await wait_until_the_model_receives(offline_model, cut_short)
    started = time.monotonic()
    assert await fleet.stop(signal.SIGTERM) == 0, fleet.log()
    assert time.monotonic() - started < 20, "the turn is aborted, not waited for"
    assert processes_under(tmp_path) == []

    fleet = await FleetProcess.start("fleet", str(config))
    try:
        await wait_until(http, fleet, running("busy"))
        stored = (await rpc(http, url + "/a2a/jsonrpc", "GetTask", {"id": task["id"]}))["result"]
        assert stored["status"]["state"] == "TASK_STATE_FAILED"
        assert "shut down while this turn was running" in status_text(stored["status"])
    finally:
        assert await fleet.stop() == 0, fleet.log()


async def test_a_second_signal_kills_every_agent_at_once(
    make_settings: SettingsFactory, offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    agent_config(tmp_path / "agents", "held", make_settings())
    fleet = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    listed = await wait_until(http, fleet, running("held"))
    # an open stream holds the agent's graceful stop (uvicorn waits up to 10 s for open connections)
    held_open = marker("held-open")
    params = {"message": user_message(f"[[slow:60]] {held_open}")}
    held = asyncio.create_task(stream(http, listed["held"]["url"] + "/a2a/jsonrpc", params))
    await wait_until_the_model_receives(offline_model, held_open)
    started = time.monotonic()
    fleet.process.send_signal(signal.SIGTERM)
    await fleet.wait_for_line(r"SIGTERM: stopping")
    fleet.process.send_signal(signal.SIGINT)
    assert await fleet.stop() == 0, fleet.log()
    assert time.monotonic() - started < 5, fleet.log()
    await fleet.wait_for_line(r"second SIGINT: killing every agent now", timeout=1)
    assert not alive(listed["held"]["pid"]) and not alive(backend_pid(listed["held"]))
    assert processes_under(tmp_path) == []
    with contextlib.suppress(httpx.HTTPError, AssertionError, json.JSONDecodeError):
        await held
