"""Turns over the real OpenCode, beyond what the behaviour suite asserts for every backend: concurrent and busy
contexts, OpenCode's own session after a cancel or a timeout, tool call and question parts, data and file parts,
tasks kept over a restart, a lost session recreated, /health while the backend is down."""

import asyncio
import json
import os
import signal
import time
import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import (
    V1,
    answer_text,
    data_parts,
    final_state,
    rpc,
    send,
    session_of,
    state_of,
    status_text,
    stream,
    task_answer,
    user_message,
)
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.tenants import own_session_id, sole_backend

pytestmark = pytest.mark.slow


async def test_ten_concurrent_contexts_do_not_cross_talk(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    prompts = [marker(f"context{i}") for i in range(10)]
    tasks = await asyncio.gather(*(send(http, agent.jsonrpc, prompt) for prompt in prompts))
    for prompt, task in zip(prompts, tasks, strict=True):
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task_answer(task) == f"Offline model reply: {prompt}"
    assert len({t["contextId"] for t in tasks}) == 10


async def test_second_message_in_a_busy_context_waits(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    context = str(uuid.uuid4())
    finished: dict[str, float] = {}

    async def timed(name: str, text: str) -> dict[str, Any]:
        task = await send(http, agent.jsonrpc, text, context_id=context)
        finished[name] = time.monotonic()
        return task

    first_prompt = marker("first")
    slow = asyncio.create_task(timed("slow", f"{first_prompt} [[slow:2]]"))
    await wait_until_the_model_receives(agent.model, first_prompt)
    second = await timed("second", "[[turns]]")
    first = await slow
    assert task_answer(first) == f"Offline model reply: {first_prompt}"
    assert task_answer(second) == "This conversation holds 2 user messages."
    assert finished["second"] > finished["slow"]


async def test_a_stream_opens_with_its_task_submitted_while_its_turn_waits_else_working(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    context = str(uuid.uuid4())
    first = await stream(http, agent.jsonrpc, {"message": user_message("one", context)})
    assert first[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED", "the context's session is not open yet"
    working = first[1]["statusUpdate"]
    assert working["status"]["state"] == "TASK_STATE_WORKING"
    session = working["metadata"]["a2a-wrapper"]["session"]

    second = await stream(http, agent.jsonrpc, {"message": user_message("two", context)})
    opened = second[0]["task"]
    assert opened["status"]["state"] == "TASK_STATE_WORKING" and opened["status"]["timestamp"]
    assert opened["metadata"]["a2a-wrapper"] == {"session": session, "sessionRecreated": False}
    assert opened["history"][0]["parts"] == [{"text": "two"}]
    assert not [e for e in second if e.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_WORKING"]
    assert answer_text(second) == "Offline model reply: two" and final_state(second) == "TASK_STATE_COMPLETED"

    slow_prompt = marker("slow")
    slow = asyncio.create_task(
        stream(http, agent.jsonrpc, {"message": user_message(f"{slow_prompt} [[slow:2]]", context)})
    )
    await wait_until_the_model_receives(agent.model, slow_prompt)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": user_message("three", context)},
    }
    states = []
    async with http.stream("POST", agent.jsonrpc, json=body, headers=V1) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                result = json.loads(line[5:])["result"]
                states.append(state_of(result))
                if len(states) == 1:
                    assert not slow.done(), "the waiting turn's task reaches its caller before the running turn ends"
    assert states[0] == "TASK_STATE_SUBMITTED" and states[1] == "TASK_STATE_WORKING"
    assert states[-1] == "TASK_STATE_COMPLETED" and final_state(await slow) == "TASK_STATE_COMPLETED"


async def test_cancel_aborts_the_backend_turn(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": user_message("[[long:400]] [[slow:30]]")},
    }
    events: list[dict[str, Any]] = []
    async with http.stream("POST", agent.jsonrpc, json=body, headers=V1) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            events.append(json.loads(line[5:])["result"])
            if "artifactUpdate" in events[-1] and len(events) < 100:
                task_id = events[0]["task"]["id"]
                canceled = await rpc(http, agent.jsonrpc, "CancelTask", {"id": task_id})
                assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
                break
    session_id = own_session_id(session_of(events))
    busy = await sole_backend(agent.agent).request("GET", "/session/status")
    assert session_id not in busy, "OpenCode must have stopped the turn"
    messages = await sole_backend(agent.agent).request("GET", f"/session/{session_id}/message")
    assert messages[-1]["info"]["error"]["name"] == "MessageAbortedError"
    await asyncio.sleep(1)
    task = (await rpc(http, agent.jsonrpc, "GetTask", {"id": task_id}))["result"]
    assert task["status"]["state"] == "TASK_STATE_CANCELED"
    again = await send(http, agent.jsonrpc, "after cancel", context_id=task["contextId"])
    assert task_answer(again) == "Offline model reply: after cancel"


async def test_timeout_fails_the_task_and_aborts(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(timeouts={"turn": 2}), offline_model) as served:
        events = await stream(http, served.jsonrpc, {"message": user_message("too slow [[slow:20]]")})
        final = events[-1]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_FAILED"
        assert "2 s limit" in status_text(final)
        session_id = own_session_id(session_of(events))
        busy = await sole_backend(served.agent).request("GET", "/session/status")
        assert session_id not in busy


async def test_allowed_tool_call_runs(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    command = json.dumps({"command": "echo allowed > allowed.txt"})
    events = await stream(http, agent.jsonrpc, {"message": user_message(f"[[tool:bash {command}]]")})
    assert final_state(events) == "TASK_STATE_COMPLETED"
    assert (agent.workdir / "allowed.txt").read_text().strip() == "allowed"
    [permission] = data_parts(events, "permission")
    assert permission["decision"] == "allow" and permission["tool"] == "bash"
    calls = data_parts(events, "tool_call")
    assert calls[0]["arguments"]["command"] == "echo allowed > allowed.txt" and calls[0]["kind"] == "execute"
    assert [r["status"] for r in data_parts(events, "tool_result")] == ["completed"]


async def test_data_and_file_parts_reach_the_backend(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    await http.delete(agent.model.url + "/control/requests")
    message = user_message("look at these")
    message["parts"] += [
        {"data": {"ticket": "ABC-123", "priority": 2}},
        {"url": "data:text/plain;base64,ZmlsZSBib2R5IGhlcmU=", "mediaType": "text/plain", "filename": "note.txt"},
    ]
    events = await stream(http, agent.jsonrpc, {"message": message})
    assert final_state(events) == "TASK_STATE_COMPLETED"
    requests = (await http.get(agent.model.url + "/control/requests")).json()
    sent = json.dumps(requests[-1])
    assert "ABC-123" in sent
    assert "file body here" in sent or "ZmlsZSBib2R5IGhlcmU=" in sent


async def test_unusable_file_url_is_rejected_with_a_sentence(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    message = user_message("read this")
    message["parts"].append({"url": "file:///etc/passwd", "mediaType": "text/plain"})
    task = (await rpc(http, agent.jsonrpc, "SendMessage", {"message": message}))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert "file:///etc/passwd" in status_text(task["status"])


async def test_context_and_tasks_survive_a_wrapper_restart(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    settings = make_settings()
    async with serving(settings, offline_model) as served:
        first = await send(http, served.jsonrpc, "before restart")
    async with serving(settings, offline_model) as served:
        second = await send(http, served.jsonrpc, "[[turns]]", context_id=first["contextId"])
        assert task_answer(second) == "This conversation holds 2 user messages."
        old = (await rpc(http, served.jsonrpc, "GetTask", {"id": first["id"]}))["result"]
        assert task_answer(old) == "Offline model reply: before restart"


async def test_a_session_the_backend_lost_is_recreated(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    first = await send(http, agent.jsonrpc, "hello")
    events = await stream(http, agent.jsonrpc, {"message": user_message("again", first["contextId"])})
    session_id = session_of(events)
    await sole_backend(agent.agent).request("DELETE", f"/session/{own_session_id(session_id)}")
    events = await stream(http, agent.jsonrpc, {"message": user_message("[[turns]]", first["contextId"])})
    meta = events[-1]["statusUpdate"]["metadata"]["a2a-wrapper"]
    assert meta["sessionRecreated"] is True and meta["session"] != session_id
    assert answer_text(events) == "This conversation holds 1 user messages."


async def test_backend_killed_mid_turn_fails_the_task_and_comes_back(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    pid = sole_backend(agent.agent)._child.pid
    doomed = marker("doomed")
    turn = asyncio.create_task(stream(http, agent.jsonrpc, {"message": user_message(f"[[slow:20]] {doomed}")}))
    await wait_until_the_model_receives(agent.model, doomed)
    os.killpg(pid, signal.SIGKILL)
    async with asyncio.timeout(5):  # the moment the process is gone (no call to it: readiness asks none)
        while (down := await http.get(agent.url + "/health")).status_code != 503:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    assert down.json()["backend"]["healthy"] is False
    events = await turn
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_FAILED"
    assert "stopped during the turn" in status_text(final)
    async with asyncio.timeout(30):
        while (await http.get(agent.url + "/health")).status_code != 200:  # noqa: ASYNC110
            await asyncio.sleep(0.2)
    again = await send(http, agent.jsonrpc, "back again", context_id=events[0]["task"]["contextId"])
    assert task_answer(again) == "Offline model reply: back again"


async def test_a_question_pauses_the_task_and_the_answer_resumes_it(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    asked = json.dumps(
        {
            "questions": [
                {"question": "Which color?", "header": "Color", "options": [{"label": "Red", "description": "warm"}]}
            ]
        }
    )
    events = await stream(http, agent.jsonrpc, {"message": user_message(f"[[question:{asked}]]")})
    assert final_state(events) == "TASK_STATE_INPUT_REQUIRED"
    status = events[-1]["statusUpdate"]["status"]
    [question] = [p["data"]["question"] for p in status["message"]["parts"] if "data" in p]
    assert question["text"] == "Which color?" and question["options"] == ["Red"]
    task = events[0]["task"]
    resumed = await stream(http, agent.jsonrpc, {"message": user_message("Blue", task["contextId"], task["id"])})
    assert final_state(resumed) == "TASK_STATE_COMPLETED"
    assert "Blue" in answer_text(resumed), "the model saw the person's answer"


async def test_an_event_larger_than_aiohttps_line_limit_reaches_the_turn(
    agent: ServedAgent, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    # OpenCode sends a message's whole text in one event (`message.part.updated`): past what aiohttp reads as one
    # line, the event stream broke (LineTooLong) and reconnected, and the turn's events in between were lost
    words = " ".join(f"w{n}" for n in range(150_000))  # ~1 MB, a quarter of what a message may hold
    assert len(words) > 2**20
    events = await stream(http, agent.jsonrpc, {"message": user_message(f"[[turns]] {words}")})
    assert final_state(events) == "TASK_STATE_COMPLETED", status_text(events[-1]["statusUpdate"]["status"])
    # a context this large makes OpenCode compact the session and go on by itself: more answers follow the first
    assert answer_text(events).startswith("This conversation holds 1 user messages.")
    assert not [r for r in caplog.records if "event stream" in r.getMessage()], "the stream held"
