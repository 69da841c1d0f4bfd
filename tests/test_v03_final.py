"""A2A 0.3's stream ends with `final: true` when the task pauses for a person, as at its end, on every 0.3 binding
(JSON-RPC, REST, gRPC): `final` is "the final event in the stream for this interaction", and the stream ends
there. Real OpenCode on the offline model, its shield asking before every command."""

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc.aio
import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.compat.v0_3 import a2a_v0_3_pb2, a2a_v0_3_pb2_grpc
from google.protobuf import json_format

from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import ShieldConfig
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.tool_messages import bash_directive

pytestmark = pytest.mark.slow


@pytest.fixture
async def asking(make_settings: SettingsFactory, offline_model: OfflineModel) -> AsyncIterator[ServedAgent]:
    async with serving(make_settings(shield=ShieldConfig(), server={"grpc_port": 0}), offline_model) as served:
        yield served


async def sse_data(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Each `data:` of an SSE answer, parsed; sent without `A2A-Version`, as 0.3 callers do."""
    events = []
    async with http.stream("POST", url, json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    return events


async def over_jsonrpc(http: httpx.AsyncClient, served: ServedAgent, text: str) -> list[tuple[str, bool]]:
    message = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {"message": message}}
    results = [event["result"] for event in await sse_data(http, served.jsonrpc, body)]
    return [(r["status"]["state"], r["final"]) for r in results if r["kind"] == "status-update"]


async def over_rest(http: httpx.AsyncClient, served: ServedAgent, text: str) -> list[tuple[str, bool]]:
    body = {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "content": [{"text": text}]}}
    events = await sse_data(http, served.rest + "/v1/message:stream", body)
    updates = [event["statusUpdate"] for event in events if "statusUpdate" in event]
    return [(_v03_state(u["status"]["state"]), u.get("final", False)) for u in updates]


async def over_grpc(http: httpx.AsyncClient, served: ServedAgent, text: str) -> list[tuple[str, bool]]:
    card = await A2ACardResolver(http, served.url).get_agent_card()
    [target] = {
        i.url for i in card.supported_interfaces if i.protocol_binding == "GRPC" and i.protocol_version == "0.3"
    }
    message = a2a_v0_3_pb2.Message(
        message_id=uuid.uuid4().hex, role=a2a_v0_3_pb2.ROLE_USER, content=[a2a_v0_3_pb2.Part(text=text)]
    )
    async with grpc.aio.insecure_channel(target) as channel:
        calls = a2a_v0_3_pb2_grpc.A2AServiceStub(channel).SendStreamingMessage(
            a2a_v0_3_pb2.SendMessageRequest(request=message)
        )
        events = [json_format.MessageToDict(event) async for event in calls]
    updates = [event["statusUpdate"] for event in events if "statusUpdate" in event]
    return [(_v03_state(u["status"]["state"]), u.get("final", False)) for u in updates]


def _v03_state(proto_state: str) -> str:
    """0.3's proto enum name (`TASK_STATE_INPUT_REQUIRED`) as its JSON-RPC spelling (`input-required`)."""
    return proto_state.removeprefix("TASK_STATE_").lower().replace("_", "-")


@pytest.mark.parametrize("binding", [over_jsonrpc, over_rest, over_grpc], ids=["jsonrpc", "rest", "grpc"])
async def test_a_0_3_stream_that_pauses_for_a_person_ends_final(
    binding: Any, asking: ServedAgent, http: httpx.AsyncClient
) -> None:
    updates = await binding(http, asking, bash_directive("touch asked.txt"))
    assert updates[-1] == ("input-required", True), updates
    assert not any(final for _, final in updates[:-1]), "only the last event of the stream is final"
    assert not (asking.workdir / "asked.txt").exists(), "nothing ran before the answer"
