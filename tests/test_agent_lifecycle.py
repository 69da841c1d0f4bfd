"""The agent as a user runs it (`a2a-wrap serve`): stop, crash and restart, with nothing left running."""

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import SettingsFactory
from tests.helpers.a2a_wire import final_state, rpc, status_text, stream, task_answer, user_message
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.serve_process import serve_config, start_serve, wait_healthy

pytestmark = pytest.mark.slow


def write_config(path: Path, settings: Any) -> Path:
    path.write_text(yaml.safe_dump(serve_config(settings, "lifecycle", path.parent / "state")))
    return path


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") < 0


async def test_sigterm_stops_the_backend_too(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    config = write_config(tmp_path / "agent.yaml", make_settings())
    process = await start_serve(config)
    url = f"http://127.0.0.1:{yaml.safe_load(config.read_text())['server']['port']}"
    health = await wait_healthy(http, url)
    backend_pid = health["backend"]["pid"]
    process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(30):
        assert await process.wait() == 0
    await asyncio.sleep(0.2)
    assert not alive(backend_pid), "opencode must not outlive the wrapper"


async def test_killed_wrapper_leaves_no_backend_and_its_task_ends_failed(
    make_settings: SettingsFactory, offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    config = write_config(tmp_path / "agent.yaml", make_settings())
    url = f"http://127.0.0.1:{yaml.safe_load(config.read_text())['server']['port']}"
    process = await start_serve(config)
    health = await wait_healthy(http, url)
    interrupted = marker("interrupted")
    params = {"message": user_message(f"[[slow:30]] {interrupted}"), "configuration": {"returnImmediately": True}}
    started = (await rpc(http, url + "/a2a/jsonrpc", "SendMessage", params))["result"]["task"]
    await wait_until_the_model_receives(offline_model, interrupted)
    process.kill()
    await process.wait()
    await asyncio.sleep(0.5)
    assert not alive(health["backend"]["pid"]), "a backend whose wrapper died is killed with it"

    process = await start_serve(config)
    try:
        await wait_healthy(http, url)
        task = (await rpc(http, url + "/a2a/jsonrpc", "GetTask", {"id": started["id"]}))["result"]
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        assert "restarted while this task was running" in status_text(task["status"])
    finally:
        process.send_signal(signal.SIGTERM)
        await process.wait()


async def test_a_task_that_ended_is_on_disk_when_its_stream_ends(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    """Killed as soon as a stream has closed, the agent started again shows that task as the stream ended it, not
    as the recovery of unfinished tasks would (failed, "restarted while this task was running")."""
    config = write_config(tmp_path / "agent.yaml", make_settings())
    url = f"http://127.0.0.1:{yaml.safe_load(config.read_text())['server']['port']}"
    process = await start_serve(config)
    try:
        await wait_healthy(http, url)
        events = await stream(http, url + "/a2a/jsonrpc", {"message": user_message("kept at once")})
        process.kill()
        await process.wait()
        assert final_state(events) == "TASK_STATE_COMPLETED"
        process = await start_serve(config)
        await wait_healthy(http, url)
        task = (await rpc(http, url + "/a2a/jsonrpc", "GetTask", {"id": events[0]["task"]["id"]}))["result"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", json.dumps(task["status"])
        assert task_answer(task) == "Offline model reply: kept at once"
    finally:
        if process.returncode is None:  # not the killed one, whose failure would hide the test's
            process.send_signal(signal.SIGTERM)
            await process.wait()


async def test_graceful_stop_fails_a_running_turn_with_a_sentence(
    make_settings: SettingsFactory, offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    config = write_config(tmp_path / "agent.yaml", make_settings())
    url = f"http://127.0.0.1:{yaml.safe_load(config.read_text())['server']['port']}"
    process = await start_serve(config)
    await wait_healthy(http, url)
    cut_short = marker("cut-short")
    params = {"message": user_message(f"[[slow:30]] {cut_short}"), "configuration": {"returnImmediately": True}}
    started = (await rpc(http, url + "/a2a/jsonrpc", "SendMessage", params))["result"]["task"]
    await wait_until_the_model_receives(offline_model, cut_short)
    process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(30):
        await process.wait()
    process = await start_serve(config)
    try:
        await wait_healthy(http, url)
        task = (await rpc(http, url + "/a2a/jsonrpc", "GetTask", {"id": started["id"]}))["result"]
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        assert "shut down while this turn was running" in status_text(task["status"]), json.dumps(task["status"])
    finally:
        process.send_signal(signal.SIGTERM)
        await process.wait()


async def test_a_stop_ends_an_open_stream_with_its_sentence_not_a_cut(
    make_settings: SettingsFactory, offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    config = write_config(tmp_path / "agent.yaml", make_settings())
    url = f"http://127.0.0.1:{yaml.safe_load(config.read_text())['server']['port']}"
    process = await start_serve(config)
    await wait_healthy(http, url)
    streaming = marker("streaming")
    watched = asyncio.create_task(
        stream(http, url + "/a2a/jsonrpc", {"message": user_message(f"[[slow:30]] {streaming}")})
    )
    await wait_until_the_model_receives(offline_model, streaming)
    process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(30):
        events = await watched  # the stream ends by itself: its last event is the task's end, not a cut connection
        assert await process.wait() == 0
    assert process.stderr is not None
    log = (await process.stderr.read()).decode()
    last = events[-1]["statusUpdate"]["status"]
    assert last["state"] == "TASK_STATE_FAILED"
    assert "shut down while this turn was running" in status_text(last)
    assert "Traceback" not in log and "graceful shutdown exceeded" not in log, log
