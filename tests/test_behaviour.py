"""One behaviour suite for every backend: the same A2A conversation against each real agent on the offline model.

A behaviour a backend cannot do is an expected failure with its reason written beside it (`cannot`), never a
silent skip: the test still runs, and counts as xfail only while it fails (strict: an unexpected pass is an error).
"""

import asyncio
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.backends.acp.backend import AcpBackend
from a2a_wrapper.backends.base import Capabilities
from a2a_wrapper.backends.copilot.backend import CopilotBackend
from a2a_wrapper.backends.opencode.backend import OpenCodeBackend
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import ModelProvider
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import MODEL_ID, SMALL_MODEL_ID, OfflineModel
from a2a_wrapper.shield.rules import ShieldConfig
from tests.conftest import ServedAgent, serving
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
from tests.helpers.model_prompts import marker, wait_until_the_model_receives

pytestmark = pytest.mark.slow

SectionBuilder = Callable[[OfflineModel, Path, Path], dict[str, Any]]


def opencode_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from a2a_wrapper.backends.install import find_binary

    provider = ModelProvider(id="offline", base_url=model.base_url, models=[MODEL_ID, SMALL_MODEL_ID])
    return {
        "kind": "opencode",
        "binary": find_binary("opencode"),
        "workdir": workdir,
        "model": f"offline/{MODEL_ID}",
        "provider": provider,
    }


def copilot_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from tests.helpers.copilot_fixtures import copilot_backend

    return copilot_backend(model, workdir)


def acp_opencode_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from tests.helpers.acp_fixtures import acp_opencode_backend

    return acp_opencode_backend(model, workdir, state_dir)


def acp_copilot_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from tests.helpers.acp_fixtures import acp_copilot_backend

    return acp_copilot_backend(model, workdir, state_dir)


NO_ACP_QUESTION = "ACP has no request for a question to the user; the agent cannot ask one over ACP"
NO_ACP_REASON = "ACP's reject_once option carries no message: the agent's model never sees the shield's sentence"
# What each behaviour needs of an adapter's declared Capabilities, and why an adapter without it cannot do it.
NEEDS = {"question": ("questions", NO_ACP_QUESTION), "deny-reason": ("deny_reason", NO_ACP_REASON)}


@dataclass(frozen=True)
class BackendUnderTest:
    name: str
    section: SectionBuilder
    capabilities: Capabilities  # as the adapter declares them: a wrong declaration fails its strict xfail
    quirks: dict[str, str] = field(default_factory=dict)  # behaviour -> why this agent (not its adapter) cannot

    @property
    def cannot(self) -> dict[str, str]:
        """behaviour -> why this backend cannot do it."""
        lacking = {b: why for b, (capability, why) in NEEDS.items() if not getattr(self.capabilities, capability)}
        return {**lacking, **self.quirks}


BACKENDS = [
    BackendUnderTest("opencode", opencode_section, OpenCodeBackend.capabilities),
    BackendUnderTest("copilot", copilot_section, CopilotBackend.capabilities),
    BackendUnderTest("acp-opencode", acp_opencode_section, AcpBackend.capabilities),
    BackendUnderTest(
        "acp-copilot",
        acp_copilot_section,
        AcpBackend.capabilities,
        {
            "error": "copilot --acp ends a turn whose model call failed with end_turn and the error as answer text, "
            "so the task completes with that text instead of failing",
        },
    ),
]


@pytest.fixture(params=BACKENDS, ids=lambda backend: backend.name)
def backend(request: pytest.FixtureRequest) -> BackendUnderTest:
    return request.param  # type: ignore[no-any-return]


@dataclass
class Harness:
    backend: BackendUnderTest
    model: OfflineModel
    tmp_path: Path
    node: pytest.Item

    def expect(self, behaviour: str) -> None:
        """This backend cannot do the behaviour: the test still runs, and must fail (strict xfail, reason shown)."""
        if behaviour in self.backend.cannot:
            self.node.add_marker(pytest.mark.xfail(reason=self.backend.cannot[behaviour], strict=True))

    def settings(self, **fields: Any) -> AgentSettings:
        state = self.tmp_path / "state"
        return AgentSettings(
            card=CardSettings(name=f"behaviour-{self.backend.name}"),
            server=ServerSettings(port=free_port()),
            backend=self.backend.section(self.model, state / "workspace", state),
            state_dir=state,
            **fields,
        )

    @asynccontextmanager
    async def serving(self, **fields: Any) -> AsyncIterator[ServedAgent]:
        async with serving(self.settings(**fields), self.model) as served:
            yield served


@pytest.fixture
def harness(
    backend: BackendUnderTest, offline_model: OfflineModel, tmp_path: Path, request: pytest.FixtureRequest
) -> Harness:
    return Harness(backend, offline_model, tmp_path, request.node)  # type: ignore[arg-type]


def bash(command: str, context_id: str | None = None) -> dict[str, Any]:
    arguments = json.dumps({"command": command, "description": "run a command"})
    return {"message": user_message(f"[[tool:bash {arguments}]]", context_id)}


def answer(task: dict[str, Any], text: str) -> dict[str, Any]:
    return {"message": user_message(text, task["contextId"], task["id"])}


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
        events = await stream(http, served.jsonrpc, bash("echo allowed > allowed.txt"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert (served.workdir / "allowed.txt").read_text().strip() == "allowed"
        [permission] = data_parts(events, "permission")
        assert permission["decision"] == "allow" and permission["kind"] == "execute"
        assert permission["command"] == "echo allowed > allowed.txt"


async def test_a_denied_tool_call_does_not_run(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("deny")
    async with harness.serving(auto_approve=False) as served:
        events = await stream(http, served.jsonrpc, bash("echo denied > denied.txt"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert not (served.workdir / "denied.txt").exists()
        [permission] = data_parts(events, "permission")
        assert permission["decision"] == "deny"


async def test_the_model_sees_why_a_call_was_denied(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("deny-reason")
    async with harness.serving(auto_approve=False) as served:
        events = await stream(http, served.jsonrpc, bash("echo denied > denied.txt"))
        assert "autoApprove is off" in answer_text(events), "the model's next reply quotes the tool result"


async def test_a_call_asked_of_a_person_runs_after_yes(harness: Harness, http: httpx.AsyncClient) -> None:
    harness.expect("ask")
    async with harness.serving(shield=ShieldConfig()) as served:  # commands: ask by default
        asked = await stream(http, served.jsonrpc, bash("echo approved > approved.txt"))
        assert final_state(asked) == "TASK_STATE_INPUT_REQUIRED"
        assert not (served.workdir / "approved.txt").exists(), "nothing runs before the answer"
        done = await stream(http, served.jsonrpc, answer(asked[0]["task"], "yes"))
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
        resumed = await stream(http, served.jsonrpc, answer(events[0]["task"], "Blue"))
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
