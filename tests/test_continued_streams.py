"""A streamed message that continues a task (here, the answer to an approval the task paused for) begins with the
Task as it stands, then its updates, on every binding: "the stream MUST begin with the Task object" (A2A §3.1.2).
Real OpenCode on the offline model; the question is asked over JSON-RPC, the answer streamed over each binding."""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.types import SendMessageRequest, a2a_pb2_grpc
from google.protobuf import json_format

from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import ShieldConfig
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import V1, approval_of, final_state, stream
from tests.helpers.tool_messages import answer_params, bash_params

pytestmark = pytest.mark.slow


@pytest.fixture
async def asking(make_settings: SettingsFactory, offline_model: OfflineModel) -> AsyncIterator[ServedAgent]:
    """An agent whose shield asks a person before every command, serving all three bindings."""
    settings = make_settings(shield=ShieldConfig(), server={"grpc_port": 0})
    async with serving(settings, offline_model) as served:
        yield served


async def over_jsonrpc(http: httpx.AsyncClient, served: ServedAgent, params: dict[str, Any]) -> list[dict[str, Any]]:
    return await stream(http, served.jsonrpc, params)


async def over_rest(http: httpx.AsyncClient, served: ServedAgent, params: dict[str, Any]) -> list[dict[str, Any]]:
    events = []
    async with http.stream("POST", served.rest + "/message:stream", json=params, headers=V1) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    return events


async def over_grpc(http: httpx.AsyncClient, served: ServedAgent, params: dict[str, Any]) -> list[dict[str, Any]]:
    card = await A2ACardResolver(http, served.url).get_agent_card()
    [target] = {i.url for i in card.supported_interfaces if i.protocol_binding == "GRPC"}
    request = json_format.ParseDict(params, SendMessageRequest())
    async with grpc.aio.insecure_channel(target) as channel:
        calls = a2a_pb2_grpc.A2AServiceStub(channel).SendStreamingMessage(request, metadata=(("a2a-version", "1.0"),))
        return [json_format.MessageToDict(event) async for event in calls]


@pytest.mark.parametrize("binding", [over_jsonrpc, over_rest, over_grpc], ids=["jsonrpc", "rest", "grpc"])
async def test_an_answer_streamed_to_a_paused_task_begins_with_the_task(
    binding: Any, asking: ServedAgent, http: httpx.AsyncClient
) -> None:
    asked = await stream(http, asking.jsonrpc, bash_params("touch answered.txt"))
    task = asked[0]["task"]
    approval = approval_of(asked)
    assert final_state(asked) == "TASK_STATE_INPUT_REQUIRED"

    async with asyncio.timeout(60):
        answered = await binding(
            http, asking, answer_params(task, data={"approval": approval["id"], "option": "allow_once"})
        )
    first = answered[0]
    assert list(first) == ["task"], f"the stream began with {list(first)}, not the Task"
    assert (first["task"]["id"], first["task"]["contextId"]) == (task["id"], task["contextId"])
    assert first["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", "the task as the answer found it"
    assert not any("task" in event for event in answered[1:]), "one Task, then its updates"
    assert final_state(answered) == "TASK_STATE_COMPLETED"
    assert (asking.workdir / "answered.txt").exists()


async def test_a_continuation_the_sdk_refuses_is_refused_first_with_no_task(
    asking: ServedAgent, http: httpx.AsyncClient
) -> None:
    asked = await stream(http, asking.jsonrpc, bash_params("touch never.txt"))
    elsewhere = answer_params(asked[0]["task"], "yes")
    elsewhere["message"]["contextId"] = "another-context"  # not the task's: the SDK refuses it
    over_rest = await http.post(asking.rest + "/message:stream", json=elsewhere, headers=V1)
    assert over_rest.status_code == 400 and over_rest.json()["error"]["status"] == "INVALID_ARGUMENT", over_rest.text
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": elsewhere}
    over_jsonrpc = await http.post(asking.jsonrpc, json=body, headers=V1)
    assert over_jsonrpc.headers["content-type"].startswith("application/json"), "an answer, not a stream"
    assert over_jsonrpc.json()["error"]["code"] == -32602, over_jsonrpc.text
    assert not (asking.workdir / "never.txt").exists()
