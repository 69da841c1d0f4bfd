"""Retries that run once: a message sent again (same caller, context and messageId) gets the task its first attempt
created; the turn and its tool calls do not run again.

Real OpenCode on the offline model. What shows a second run: the prompts the model received (each carries a
marker no other test uses) and a file a bash call appends a line to.
"""

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import ShieldConfig
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import V1, approval_of, final_state, rpc, stream, user_message
from tests.helpers.auth import AUTH, CI_KEY, KEYS, ORCHESTRATOR_KEY, bearer
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.tool_messages import answer_params, bash_directive, bash_params

pytestmark = pytest.mark.slow

COMPLETED = "TASK_STATE_COMPLETED"


def prompts_with(model: OfflineModel, word: str) -> int:
    """How many completion requests carried `word` in their last user message: one per turn that sent it."""
    count = 0
    for request in model.control.requests():
        users = [m for m in request.get("messages", []) if m.get("role") == "user"]
        count += bool(users) and word in json.dumps(users[-1])
    return count


async def send_params(http: httpx.AsyncClient, url: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = await rpc(http, url, "SendMessage", params)
    assert "result" in answer, answer
    return dict(answer["result"]["task"])


async def test_a_resent_message_returns_its_task_and_runs_its_tool_call_once(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    word = marker("once")
    params = {"message": user_message(f"{word} {bash_directive('echo ran >> once.txt')}", "ctx-" + word)}
    async with asyncio.timeout(60):
        first = await send_params(http, agent.jsonrpc, params)
        seen = prompts_with(agent.model, word)
        again = await send_params(http, agent.jsonrpc, params)
        rest = await http.post(agent.rest + "/message:send", json=params, headers=V1)
    assert first["status"]["state"] == COMPLETED
    assert again["id"] == first["id"] and again["status"]["state"] == COMPLETED
    assert rest.status_code == 200 and rest.json()["task"]["id"] == first["id"]
    assert seen >= 1 and prompts_with(agent.model, word) == seen
    assert (agent.workdir / "once.txt").read_text() == "ran\n"


async def test_a_resent_message_without_a_context_returns_its_task(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    word = marker("nocontext")
    params = {"message": user_message(word)}
    async with asyncio.timeout(60):
        first = await send_params(http, agent.jsonrpc, params)
        again = await send_params(http, agent.jsonrpc, params)
    assert again["id"] == first["id"] and again["contextId"] == first["contextId"]
    assert prompts_with(agent.model, word) == 1


async def test_the_same_message_id_naming_another_task_is_refused_and_runs_nothing(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    word = marker("othertask")
    context = "ctx-" + word
    first = {"message": user_message(f"{word} first", context)}
    async with asyncio.timeout(60):
        made = await send_params(http, agent.jsonrpc, first)
        other = await send_params(http, agent.jsonrpc, {"message": user_message(f"{word} second", context)})
        seen = prompts_with(agent.model, word)
        naming = copy.deepcopy(first)
        naming["message"]["taskId"] = other["id"]
        refused = await rpc(http, agent.jsonrpc, "SendMessage", naming)
        over_rest = await http.post(agent.rest + "/message:send", json=naming, headers=V1)
        retried = await send_params(http, agent.jsonrpc, {"message": {**first["message"], "taskId": made["id"]}})
    message_id = first["message"]["messageId"]
    sentence = f"messageId {message_id!r} was sent before and made task {made['id']}, but this message names task "
    assert refused["error"]["code"] == -32602 and refused["error"]["message"].startswith(sentence), refused
    assert over_rest.status_code == 400 and over_rest.json()["error"]["status"] == "INVALID_ARGUMENT", over_rest.text
    assert sentence in over_rest.json()["error"]["message"]
    assert retried["id"] == made["id"], "naming the task it made is a retry"
    assert prompts_with(agent.model, word) == seen == 2, "nothing ran again"


async def test_the_same_message_id_in_another_context_is_a_new_message(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    word = marker("elsewhere")
    message = user_message(word, "ctx-a-" + word)
    other = {**message, "contextId": "ctx-b-" + word}
    async with asyncio.timeout(60):
        first = await send_params(http, agent.jsonrpc, {"message": message})
        second = await send_params(http, agent.jsonrpc, {"message": other})
    assert second["id"] != first["id"] and second["contextId"] == other["contextId"]
    assert prompts_with(agent.model, word) == 2


async def test_the_same_message_id_from_another_caller_is_a_new_message(
    make_settings: SettingsFactory, offline_model: OfflineModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    word = marker("callers")
    params = {"message": user_message(word, "ctx-" + word)}
    async with (
        asyncio.timeout(90),
        serving(make_settings(auto_approve=True, auth=AUTH), offline_model) as served,
        httpx.AsyncClient(timeout=60, headers=bearer(ORCHESTRATOR_KEY)) as orchestrator,
        httpx.AsyncClient(timeout=60, headers=bearer(CI_KEY)) as ci,
    ):
        first = await send_params(orchestrator, served.jsonrpc, params)
        theirs = await send_params(ci, served.jsonrpc, params)
        again = await send_params(orchestrator, served.jsonrpc, params)
    assert theirs["id"] != first["id"] and again["id"] == first["id"]
    assert prompts_with(offline_model, word) == 2


async def test_a_stream_resent_while_its_turn_runs_follows_the_same_task(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    word = marker("racing")
    params = {"message": user_message(f"[[slow:2]] {word}", "ctx-" + word)}
    async with asyncio.timeout(60):
        original = asyncio.create_task(stream(http, agent.jsonrpc, params))
        await wait_until_the_model_receives(agent.model, word)
        retried = await stream(http, agent.jsonrpc, copy.deepcopy(params))
        first = await original
    task_id = first[0]["task"]["id"]
    assert retried[0]["task"]["id"] == task_id and retried[0]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert final_state(retried) == COMPLETED and final_state(first) == COMPLETED
    assert any("artifactUpdate" in event for event in retried)  # the live answer, not only the end
    assert prompts_with(agent.model, word) == 1


async def test_sends_racing_each_other_run_one_turn(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    word = marker("burst")
    params = {"message": user_message(f"[[slow:1]] {word}", "ctx-" + word)}
    async with asyncio.timeout(60):
        tasks = await asyncio.gather(*(send_params(http, agent.jsonrpc, copy.deepcopy(params)) for _ in range(4)))
    assert {task["id"] for task in tasks} == {tasks[0]["id"]}
    assert {task["status"]["state"] for task in tasks} == {COMPLETED}
    assert prompts_with(agent.model, word) == 1


async def test_a_stream_resent_after_its_task_ended_is_the_task_alone(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    word = marker("ended")
    params = {"message": user_message(word, "ctx-" + word)}
    async with asyncio.timeout(60):
        first = await stream(http, agent.jsonrpc, params)
        retried = await stream(http, agent.jsonrpc, params)
    assert len(retried) == 1 and retried[0]["task"]["id"] == first[0]["task"]["id"]
    assert retried[0]["task"]["status"]["state"] == COMPLETED


async def test_a_resent_answer_to_an_approval_does_not_answer_twice(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    word = marker("approval")
    async with asyncio.timeout(90), serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        asked = await stream(http, served.jsonrpc, bash_params(f"echo {word} >> asked.txt", "ctx-" + word))
        approval_of(asked)
        answer = answer_params(asked[0]["task"], "yes")
        first = await stream(http, served.jsonrpc, answer)
        again = await stream(http, served.jsonrpc, answer)
        workdir = served.workdir
    assert final_state(first) == COMPLETED
    assert len(again) == 1 and again[0]["task"]["status"]["state"] == COMPLETED
    assert (workdir / "asked.txt").read_text() == f"{word}\n"


async def test_a_message_resent_after_a_restart_returns_its_task(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    word = marker("restart")
    params = {"message": user_message(f"{word} {bash_directive('echo ran >> restart.txt')}", "ctx-" + word)}
    settings: AgentSettings = make_settings(state_dir=tmp_path / "kept", auto_approve=True)
    async with asyncio.timeout(120):
        async with serving(settings, offline_model) as served:
            first = await send_params(http, served.jsonrpc, params)
        seen = prompts_with(offline_model, word)
        async with serving(make_settings(state_dir=tmp_path / "kept", auto_approve=True), offline_model) as served:
            again = await send_params(http, served.jsonrpc, params)
    assert again["id"] == first["id"] and again["status"]["state"] == COMPLETED
    assert prompts_with(offline_model, word) == seen
    assert (settings.backend.workdir / "restart.txt").read_text() == "ran\n"
