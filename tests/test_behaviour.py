"""One behaviour suite for every backend: the same A2A conversation against each real agent on the offline model.

A behaviour a backend cannot do is an expected failure with its reason written beside it (`cannot`), never a
silent skip: the test still runs, and counts as xfail only while it fails (strict: an unexpected pass is an error).
"""

import asyncio
import json
import os
import signal
import uuid
from pathlib import Path

import httpx
import pytest

from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield.rules import ShieldConfig
from tests.conftest import serving
from tests.helpers.a2a_wire import (
    V1,
    answer_text,
    data_parts,
    final_state,
    rpc,
    send,
    status_text,
    stream,
    task_answer,
    user_message,
)
from tests.helpers.behaviour import BACKENDS, BackendUnderTest, Harness
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.tool_messages import answer_params, bash_params

pytestmark = pytest.mark.slow


@pytest.fixture(params=BACKENDS, ids=lambda backend: backend.name)
def backend(request: pytest.FixtureRequest) -> BackendUnderTest:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def harness(
    backend: BackendUnderTest, offline_model: OfflineModel, tmp_path: Path, request: pytest.FixtureRequest
) -> Harness:
    return Harness(backend, offline_model, tmp_path, request.node)  # type: ignore[arg-type]


async def test_streamed_answer_assembles_exactly(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("stream")
    async with harness.serving(auto_approve=True) as served:
        events = await stream(http, served.jsonrpc, {"message": user_message("[[long:60]]")})
        assert final_state(events) == "TASK_STATE_COMPLETED"
        chunks = [e for e in events if "artifactUpdate" in e]
        assert len(chunks) > 1, "the answer arrives in chunks, not at the end"
        assert chunks[-1]["artifactUpdate"]["lastChunk"] is True
        task = (await rpc(http, served.jsonrpc, "GetTask", {"id": events[0]["task"]["id"]}))["result"]
        assert answer_text(events) == task_answer(task), "the stored answer is the streamed one, no repeat"
        assert answer_text(events).split() == [f"word{n}" for n in range(1, 61)]


async def test_one_context_remembers_and_another_does_not(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("memory")
    async with harness.serving(auto_approve=True) as served:
        first = await send(http, served.jsonrpc, "remember this")
        assert task_answer(first) == "Offline model reply: remember this"
        second = await send(http, served.jsonrpc, "[[turns]]", context_id=first["contextId"])
        assert task_answer(second) == "This conversation holds 2 user messages."
        other = await send(http, served.jsonrpc, "[[turns]]")
        assert task_answer(other) == "This conversation holds 1 user messages."


async def test_an_allowed_tool_call_runs(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("allow")
    async with harness.serving(auto_approve=True) as served:
        events = await stream(
            http, served.jsonrpc, bash_params("echo allowed > allowed.txt", description="run a command")
        )
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert (served.workdir / "allowed.txt").read_text().strip() == "allowed"
        [permission] = data_parts(events, "permission")
        assert permission["decision"] == "allow" and permission["kind"] == "execute"
        assert permission["command"] == "echo allowed > allowed.txt"


async def test_a_denied_tool_call_does_not_run(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("deny")
    async with harness.serving(auto_approve=False) as served:
        events = await stream(
            http, served.jsonrpc, bash_params("echo denied > denied.txt", description="run a command")
        )
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert not (served.workdir / "denied.txt").exists()
        [permission] = data_parts(events, "permission")
        assert permission["decision"] == "deny"


async def test_the_model_sees_why_a_call_was_denied(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("deny-reason")
    async with harness.serving(auto_approve=False) as served:
        events = await stream(
            http, served.jsonrpc, bash_params("echo denied > denied.txt", description="run a command")
        )
        assert "autoApprove is off" in answer_text(events), "the model's next reply quotes the tool result"


async def test_a_call_asked_of_a_person_runs_after_yes(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("ask")
    async with harness.serving(shield=ShieldConfig()) as served:  # commands: ask by default
        asked = await stream(
            http, served.jsonrpc, bash_params("echo approved > approved.txt", description="run a command")
        )
        assert final_state(asked) == "TASK_STATE_INPUT_REQUIRED"
        assert not (served.workdir / "approved.txt").exists(), "nothing runs before the answer"
        done = await stream(http, served.jsonrpc, answer_params(asked[0]["task"], "yes"))
        assert final_state(done) == "TASK_STATE_COMPLETED"
        assert (served.workdir / "approved.txt").read_text().strip() == "approved"
        [permission] = data_parts(done, "permission")
        assert permission["decision"] == "allow" and permission["rule"] == "person:person"


async def test_a_question_is_answered_by_the_next_message(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("question")
    color = {"question": "Which color?", "header": "Color", "options": [{"label": "Red", "description": ""}]}
    asked = json.dumps({"questions": [color]})
    async with harness.serving(auto_approve=True) as served:
        events = await stream(http, served.jsonrpc, {"message": user_message(f"[[question:{asked}]]")})
        assert final_state(events) == "TASK_STATE_INPUT_REQUIRED"
        status = events[-1]["statusUpdate"]["status"]
        [question] = [p["data"]["question"] for p in status["message"]["parts"] if "data" in p]
        assert question["text"] == "Which color?"
        resumed = await stream(http, served.jsonrpc, answer_params(events[0]["task"], "Blue"))
        assert final_state(resumed) == "TASK_STATE_COMPLETED"
        assert "Blue" in answer_text(resumed), "the model saw the person's answer"


async def test_cancel_stops_the_turn_and_the_context_goes_on(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("cancel")
    async with harness.serving(auto_approve=True) as served:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {"message": user_message("[[long:400]] [[slow:30]]")},
        }
        task_id = context_id = ""
        async with http.stream("POST", served.jsonrpc, json=body, headers=V1) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                result = json.loads(line[5:])["result"]
                if "task" in result:
                    task_id, context_id = result["task"]["id"], result["task"]["contextId"]
                if "artifactUpdate" in result:
                    canceled = await rpc(http, served.jsonrpc, "CancelTask", {"id": task_id})
                    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
                    break
        await asyncio.sleep(1)
        task = (await rpc(http, served.jsonrpc, "GetTask", {"id": task_id}))["result"]
        assert task["status"]["state"] == "TASK_STATE_CANCELED", "a canceled task stays canceled"
        async with asyncio.timeout(30):  # the backend turn was aborted: the context is free at once
            again = await send(http, served.jsonrpc, "after cancel", context_id=context_id)
        assert task_answer(again) == "Offline model reply: after cancel"


async def test_a_turn_past_its_limit_fails_with_a_sentence(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("timeout")
    async with harness.serving(auto_approve=True, timeouts={"turn": 3}) as served:
        events = await stream(http, served.jsonrpc, {"message": user_message("too slow [[slow:30]]")})
        final = events[-1]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_FAILED"
        assert "3 s limit" in status_text(final)
        context_id = events[0]["task"]["contextId"]
        async with asyncio.timeout(30):
            again = await send(http, served.jsonrpc, "after timeout", context_id=context_id)
        assert task_answer(again) == "Offline model reply: after timeout"


async def test_a_backend_error_fails_the_task_with_its_sentence(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("error")
    async with harness.serving(auto_approve=True) as served:
        async with asyncio.timeout(90):
            events = await stream(http, served.jsonrpc, {"message": user_message("[[error:400]]")})
        final = events[-1]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_FAILED"
        assert "400" in status_text(final), status_text(final)


async def test_a_backend_killed_mid_turn_fails_the_task_and_comes_back(
    harness: Harness, http: httpx.AsyncClient
) -> None:
    harness.expect("killed")
    async with harness.serving(auto_approve=True) as served:
        first = await send(http, served.jsonrpc, "warm up")
        pid = (await served.agent.backend.health())["pid"]
        doomed = marker("doomed")
        turn = asyncio.create_task(
            stream(http, served.jsonrpc, {"message": user_message(f"[[slow:20]] {doomed}", first["contextId"])})
        )
        await wait_until_the_model_receives(harness.model, doomed)  # killed while the model is answering
        os.kill(pid, signal.SIGKILL)
        async with asyncio.timeout(30):
            events = await turn
        final = events[-1]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_FAILED"
        assert "stopped during the turn" in status_text(final), status_text(final)
        async with asyncio.timeout(60):
            while (await http.get(served.url + "/health")).status_code != 200:  # noqa: ASYNC110
                await asyncio.sleep(0.2)
        assert (await served.agent.backend.health())["pid"] != pid
        again = await send(http, served.jsonrpc, "back again", context_id=first["contextId"])
        assert task_answer(again) == "Offline model reply: back again"


async def test_a_context_resumes_after_a_wrapper_restart(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("resume")
    settings = harness.settings(auto_approve=True)
    async with serving(settings, harness.model) as served:
        first = await send(http, served.jsonrpc, f"before restart {uuid.uuid4().hex[:6]}")
    async with serving(settings, harness.model) as served:
        second = await send(http, served.jsonrpc, "[[turns]]", context_id=first["contextId"])
        assert task_answer(second) == "This conversation holds 2 user messages."
