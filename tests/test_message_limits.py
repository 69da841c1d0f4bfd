"""What one message may hold (server.max_parts, server.max_text_bytes): past either, the protocol's invalid-params
error names the limit, its config key and the value seen; nothing runs and no task is stored.

The counting is a pure table; the wire tests run the real agent (OpenCode on the offline model).
"""

import asyncio
import json
import time
import uuid
from typing import Any

import httpx
import pytest
from a2a.types import Message, Part, Role
from a2a.utils.errors import InvalidParamsError
from google.protobuf.struct_pb2 import Value

from a2a_wrapper.frontend.handler.message_limits import MessageLimits
from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import V1, rpc, user_message

INVALID_PARAMS = -32602


def message_of(*parts: Part) -> Message:
    return Message(message_id="m", role=Role.ROLE_USER, parts=list(parts))


def data_part(text: str) -> Part:
    part = Part()
    part.data.CopyFrom(Value(string_value=text))
    return part


@pytest.mark.parametrize(
    ("message", "refusal"),
    [
        (message_of(*[Part(text="a")] * 3), None),
        (message_of(*[Part(text="a")] * 4), "The message has 4 parts; server.max_parts allows 3."),
        (message_of(Part(text="é" * 5)), None),  # 10 bytes in UTF-8, the limit exactly
        (message_of(Part(text="é" * 5), Part(text="x")), "holds 11 bytes of text; server.max_text_bytes allows 10"),
        (message_of(Part(url="https://example.com/" + "p" * 10)), "holds 30 bytes of text"),
        (message_of(data_part("d" * 20)), "holds 22 bytes of text"),  # a data part by its encoded size
        (message_of(Part(raw=b"\0" * 100)), None),  # file bytes are the body limit's
    ],
)
def test_a_message_is_measured_by_its_parts_and_its_text(message: Message, refusal: str | None) -> None:
    limits = MessageLimits(max_parts=3, max_text_bytes=10)
    if refusal is None:
        limits.check(message)
        return
    with pytest.raises(InvalidParamsError) as refused:
        limits.check(message)
    assert refusal in str(refused.value.message) and "Nothing was run." in str(refused.value.message)


def many_parts(count: int) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "abcdefghijklmnop"}] * count}


async def listed_tasks(http: httpx.AsyncClient, agent: ServedAgent) -> int:
    answer = await rpc(http, agent.jsonrpc, "ListTasks", {})
    return len(answer["result"].get("tasks", []))


async def slowest_health(http: httpx.AsyncClient, url: str, stop: asyncio.Event) -> float:
    slowest = 0.0
    while not stop.is_set():
        started = time.perf_counter()
        await http.get(url + "/health")  # 503 too is an answer: the front end's loop is free; OpenCode may lag
        slowest = max(slowest, time.perf_counter() - started)
        await asyncio.sleep(0.02)
    return slowest


@pytest.mark.slow
@pytest.mark.alone
async def test_a_hundred_thousand_parts_are_refused_and_health_keeps_answering(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": many_parts(100_000)}})
    stop = asyncio.Event()
    async with asyncio.timeout(60):
        health = asyncio.create_task(slowest_health(http, agent.url, stop))
        await asyncio.sleep(0.1)
        response = await http.post(agent.jsonrpc, content=body, headers={**V1, "Content-Type": "application/json"})
        rest = await http.post(agent.rest + "/message:send", json={"message": many_parts(100_000)}, headers=V1)
        stop.set()
        slowest = await health
        listed = await listed_tasks(http, agent)
    assert rest.status_code == 400 and rest.json()["error"]["message"].startswith("The message has 100000 parts")
    error = response.json()["error"]
    assert error["code"] == INVALID_PARAMS
    assert error["message"] == "The message has 100000 parts; server.max_parts allows 256. Nothing was run."
    assert listed == 0
    assert slowest < 1.0, f"/health took {slowest:.2f} s while the message was refused"


@pytest.mark.slow
async def test_limits_hold_on_json_rpc_and_rest_and_a_message_at_them_runs(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    limits = {"max_parts": 3, "max_text_bytes": 1000}
    async with asyncio.timeout(90), serving(make_settings(auto_approve=True, server=limits), offline_model) as served:
        at_the_limit = await rpc(http, served.jsonrpc, "SendMessage", {"message": many_parts(3)})
        too_many = await rpc(http, served.jsonrpc, "SendMessage", {"message": many_parts(4)})
        too_long = await rpc(http, served.jsonrpc, "SendStreamingMessage", {"message": user_message("x" * 1001)})
        rest = await http.post(served.rest + "/message:send", json={"message": user_message("x" * 1001)}, headers=V1)
        listed = await listed_tasks(http, served)
    assert at_the_limit["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert too_many["error"]["code"] == INVALID_PARAMS
    assert too_many["error"]["message"].startswith("The message has 4 parts; server.max_parts allows 3.")
    sentence = "The message holds 1001 bytes of text; server.max_text_bytes allows 1000. Nothing was run."
    assert too_long["error"] == {**too_long["error"], "code": INVALID_PARAMS, "message": sentence}
    assert rest.status_code == 400 and rest.json()["error"]["message"] == sentence
    assert listed == 1
