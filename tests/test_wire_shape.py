"""What a caller reads on the wire, on every binding: a stored task's answer as one text part, counts as
integers under camelCase keys, 0.3 REST streams that refuse with a status code, and a log without errors for
a caller's mistakes."""

import asyncio
import gc
import json
import logging
import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import ServedAgent
from tests.helpers.a2a_wire import V1, answer_text, rpc, stream, user_message

pytestmark = pytest.mark.slow

LONG = "[[long:20]] [[slow:1]]"  # spread over a second: many chunks
WHOLE = " ".join(f"word{i}" for i in range(1, 21))
NO_EXTENDED_CARD = "The agent does not support authenticated extended cards"  # a2a-sdk's sentence


def response_parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    (response,) = [a for a in task["artifacts"] if a.get("name") == "response"]
    return list(response["parts"])


def chunks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["artifactUpdate"] for e in events if "artifactUpdate" in e]


async def rpc03(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A 0.3 call: a 0.3 client sends no A2A-Version header."""
    response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    return dict(response.json())


def v03_message(text: str, **fields: str) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    } | fields


async def sse_results(http: httpx.AsyncClient, url: str, body: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """The first `limit` JSON-RPC results of an SSE response."""
    found: list[dict[str, Any]] = []
    async with http.stream("POST", url, json=body, headers=V1) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                found.append(json.loads(line[5:])["result"])
                if len(found) == limit:
                    break
    return found


async def test_a_streamed_answer_is_one_part_in_every_stored_view(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    events = await stream(http, agent.jsonrpc, {"message": user_message(LONG)})
    streamed = chunks(events)
    assert len(streamed) > 1 and answer_text(events) == WHOLE  # streaming stays incremental
    assert [c.get("append", False) for c in streamed] == [False] + [True] * (len(streamed) - 1)
    assert [c.get("lastChunk", False) for c in streamed] == [False] * (len(streamed) - 1) + [True]
    task_id = events[0]["task"]["id"]
    one_part = [{"text": WHOLE}]

    got = (await rpc(http, agent.jsonrpc, "GetTask", {"id": task_id}))["result"]
    assert response_parts(got) == one_part
    rest = (await http.get(f"{agent.rest}/tasks/{task_id}", headers=V1)).json()
    assert response_parts(rest) == one_part
    listed = (await rpc(http, agent.jsonrpc, "ListTasks", {"includeArtifacts": True}))["result"]["tasks"]
    rest_listed = (await http.get(f"{agent.rest}/tasks?includeArtifacts=true", headers=V1)).json()["tasks"]
    for page in (listed, rest_listed):  # ListTasks prints a part's empty fields too ("mediaType": "")
        assert [[part["text"] for part in response_parts(task)] for task in page] == [[WHOLE]]
    old = (await rpc03(http, agent.jsonrpc, "tasks/get", {"id": task_id}))["result"]
    assert response_parts(old) == [{"kind": "text", "text": WHOLE}]
    old_rest = (await http.get(f"{agent.rest}/v1/tasks/{task_id}")).json()
    assert response_parts(old_rest) == one_part


async def test_a_unary_reply_holds_the_whole_answer_in_one_part(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    reply = await rpc(http, agent.jsonrpc, "SendMessage", {"message": user_message(LONG)})
    assert response_parts(reply["result"]["task"]) == [{"text": WHOLE}]
    rest = await http.post(f"{agent.rest}/message:send", json={"message": user_message(LONG)}, headers=V1)
    assert response_parts(rest.json()["task"]) == [{"text": WHOLE}]
    old = await rpc03(http, agent.jsonrpc, "message/send", {"message": v03_message(LONG)})
    assert response_parts(old["result"]) == [{"kind": "text", "text": WHOLE}]


async def test_a_subscription_starts_from_the_answer_so_far_in_one_part(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage"}
    body["params"] = {"message": user_message("[[long:30]] [[slow:3]]")}
    async with asyncio.timeout(30), http.stream("POST", agent.jsonrpc, json=body, headers=V1) as response:
        seen: list[dict[str, Any]] = []
        lines = response.aiter_lines()
        while len(chunks(seen)) < 3:
            line = await anext(lines)
            if line.startswith("data:"):
                seen.append(json.loads(line[5:])["result"])
        task_id = seen[0]["task"]["id"]
        subscribe = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}
        (snapshot,) = await sse_results(http, agent.jsonrpc, subscribe, limit=1)
        parts = response_parts(snapshot["task"])
        assert len(parts) == 1 and parts[0]["text"].startswith("word1 word2 word3")
        async for _ in lines:  # the first stream runs to its end
            pass


async def test_usage_counts_are_camel_case_integers_on_every_binding(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    events = await stream(http, agent.jsonrpc, {"message": user_message("count me")})
    task_id = events[0]["task"]["id"]
    streamed = events[-1]["statusUpdate"]["metadata"]["a2a-wrapper"]["usage"]
    got = (await rpc(http, agent.jsonrpc, "GetTask", {"id": task_id}))["result"]["metadata"]["a2a-wrapper"]["usage"]
    rest = (await http.get(f"{agent.rest}/tasks/{task_id}", headers=V1)).json()["metadata"]["a2a-wrapper"]["usage"]
    old = (await rpc03(http, agent.jsonrpc, "tasks/get", {"id": task_id}))["result"]["metadata"]["a2a-wrapper"]["usage"]
    for usage in (streamed, got, rest, old):
        assert set(usage) == {"inputTokens", "outputTokens", "reasoningTokens", "cost"}
        counts = [usage["inputTokens"], usage["outputTokens"], usage["reasoningTokens"]]
        assert all(type(count) is int for count in counts), usage  # 5, never 5.0
        assert usage["outputTokens"] > 0 and usage["inputTokens"] > 0
        assert isinstance(usage["cost"], int | float)


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_subscribing_to_an_unknown_or_ended_task_is_refused_with_a_status(
    agent: ServedAgent, http: httpx.AsyncClient, version: str, method: str
) -> None:
    ended = (await rpc(http, agent.jsonrpc, "SendMessage", {"message": user_message("done")}))["result"]["task"]
    base, headers = (agent.rest, V1) if version == "1.0" else (agent.rest + "/v1", {})
    unknown = await http.request(method, f"{base}/tasks/no-such-task:subscribe", headers=headers)
    assert (unknown.status_code, unknown.json()["error"]["status"]) == (404, "NOT_FOUND")
    finished = await http.request(method, f"{base}/tasks/{ended['id']}:subscribe", headers=headers)
    assert (finished.status_code, finished.json()["error"]["status"]) == (400, "FAILED_PRECONDITION")
    assert "terminal state" in finished.json()["error"]["message"]


async def test_a_0_3_stream_to_an_ended_task_is_refused_with_a_status(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    ended = (await rpc(http, agent.jsonrpc, "SendMessage", {"message": user_message("done")}))["result"]["task"]
    message = {"messageId": "m-late", "role": "ROLE_USER", "taskId": ended["id"], "content": [{"text": "more"}]}
    refused = await http.post(f"{agent.rest}/v1/message:stream", json={"message": message})
    assert (refused.status_code, refused.json()["error"]["status"]) == (400, "FAILED_PRECONDITION")


async def test_a_callers_mistakes_leave_no_warning_or_error_in_the_log(
    agent: ServedAgent, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    ended = (await rpc(http, agent.jsonrpc, "SendMessage", {"message": user_message("done")}))["result"]["task"]
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="a2a.utils.error_handlers")  # shown at DEBUG, not hidden
    caplog.set_level(logging.DEBUG, logger="a2a.server.request_handlers.request_handler")
    late = user_message("more", task_id=ended["id"])
    answers = [
        await rpc(http, agent.jsonrpc, "SendMessage", {"message": late}),
        await rpc03(http, agent.jsonrpc, "message/send", {"message": v03_message("more", taskId=ended["id"])}),
        await rpc(http, agent.jsonrpc, "GetTask", {"id": "no-such-task"}),
        await rpc(http, agent.jsonrpc, "GetTask", {"id": 5, "historyLength": "many"}),
        await rpc(http, agent.jsonrpc, "NoSuchMethod", {}),
        await rpc(http, agent.jsonrpc, "GetExtendedAgentCard", {}),  # the card says it has none
        await rpc03(http, agent.jsonrpc, "agent/getAuthenticatedExtendedCard", {}),
    ]
    assert [a["error"]["code"] for a in answers] == [-32004, -32004, -32001, -32602, -32601, -32004, -32004]
    unversioned = await http.post(
        agent.jsonrpc, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    )
    assert unversioned.json()["error"]["code"] == -32009
    statuses = [
        (await http.post(f"{agent.rest}/message:send", json={"message": late}, headers=V1)).status_code,
        (await http.post(f"{agent.rest}/message:stream", json={"message": late}, headers=V1)).status_code,
        (await http.get(f"{agent.rest}/tasks/no-such-task", headers=V1)).status_code,
        (await http.get(f"{agent.rest}/v1/tasks/no-such-task:subscribe")).status_code,
        (await http.get(f"{agent.rest}/extendedAgentCard", headers=V1)).status_code,
        (await http.get(f"{agent.rest}/v1/card")).status_code,
    ]
    assert statuses == [400, 400, 404, 404, 400, 400]
    gc.collect()  # a leaked asyncio task says "destroyed but pending" when collected
    await asyncio.sleep(0.1)
    loud = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == []
    assert not any("Task was destroyed" in r.getMessage() for r in caplog.records)
    lowered = [r for r in caplog.records if r.name == "a2a.utils.error_handlers"]
    assert lowered and all(r.levelname == "DEBUG" for r in lowered)
    unsupported = [r for r in caplog.records if r.getMessage() == "Validation failure: " + NO_EXTENDED_CARD]
    assert len(unsupported) == 4 and all(r.levelname == "DEBUG" for r in unsupported), "each call, at DEBUG"
