"""A stream that breaks can be resumed: the client reconnects with the last event id it saw (`Last-Event-ID` on SSE,
the `last-event-id` metadata on gRPC) and gets every event after it, once and in order, then the live ones; on
SQLite and on PostgreSQL from another replica; across an approval; an id that is not one is refused.

Real OpenCode on the offline model, kept talking by `[[long:N]] [[slow:S]]`; each stream is cut by closing its
connection while the turn runs.
"""

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.types import GetTaskRequest, SendMessageRequest, SubscribeToTaskRequest, a2a_pb2_grpc
from google.protobuf import json_format

from a2a_wrapper.frontend.handler.resumable_streams import EVENT_ID_KEY
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import ShieldConfig
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import V1, approval_of, final_state, rpc, stream, task_answer, user_message
from tests.helpers.auth import AUTH, CI_KEY, KEYS, ORCHESTRATOR_KEY, bearer
from tests.helpers.serve_process import start_serve, wait_healthy
from tests.helpers.tool_messages import answer_params, bash_params
from tests.test_replicas import Replica, replica_config, stop

pytestmark = pytest.mark.slow

LONG = "[[long:80]] [[slow:4]] resume me"  # 80 words over about 4 s: a turn to cut in the middle
SEEN_BEFORE_CUT = 6  # events with an id the first stream reads before its connection is closed


@dataclass
class Event:
    id: str | None
    body: dict[str, Any]  # the StreamResponse: {"task": …} / {"statusUpdate": …} / {"artifactUpdate": …}


async def sse(response: httpx.Response, jsonrpc: bool) -> AsyncIterator[Event]:
    """The events of an SSE response as they arrive, with their `id:`."""
    event_id: str | None = None
    async for line in response.aiter_lines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            payload = json.loads(line[5:])
            if jsonrpc:
                assert "result" in payload, payload
                payload = payload["result"]
            yield Event(event_id, payload)
            event_id = None


def jsonrpc_body(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}


async def cut_after(http: httpx.AsyncClient, url: str, body: dict[str, Any], count: int) -> list[Event]:
    """Reads a JSON-RPC stream until `count` events with an id came, then closes the connection mid-stream."""
    seen: list[Event] = []
    async with http.stream("POST", url, json=body, headers=V1) as response:
        assert response.status_code == 200
        async for event in sse(response, jsonrpc=True):
            seen.append(event)
            if sum(e.id is not None for e in seen) == count:
                break
    assert final_state([e.body for e in seen]) not in ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED"), "cut mid-turn"
    return seen


async def resumed_jsonrpc(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], last: str) -> Any:
    """The response to a streaming method asked for with `Last-Event-ID`: its events, or its error."""
    async with http.stream("POST", url, json=jsonrpc_body(method, params), headers={**V1, "Last-Event-ID": last}) as r:
        if not r.headers["content-type"].startswith("text/event-stream"):
            return json.loads(await r.aread())
        return [event async for event in sse(r, jsonrpc=True)]


def text_of(events: list[Event]) -> str:
    """The answer the artifact chunks of `events` spell."""
    return "".join(
        part.get("text", "")
        for e in events
        if "artifactUpdate" in e.body and e.body["artifactUpdate"]["artifact"].get("name") == "response"
        for part in e.body["artifactUpdate"]["artifact"]["parts"]
    )


def check_exactly_once(before: list[Event], after: list[Event], task: dict[str, Any]) -> None:
    """Ids unique and rising, the answer whole and once, the end reached."""
    ids = [e.id for e in before + after if e.id is not None]
    positions = [int(i.rpartition(":")[2]) for i in ids]
    assert len(set(ids)) == len(ids), f"an event came twice: {ids}"
    assert positions == sorted(positions), f"out of order: {ids}"
    assert all(e.id is not None for e in before + after if "task" not in e.body), "every event of the task has its id"
    assert {i.rpartition(":")[0] for i in ids} == {task["id"]}
    assert text_of(before) + text_of(after) == task_answer(task), "the answer, nothing missing, nothing twice"
    assert final_state([e.body for e in after]) == "TASK_STATE_COMPLETED"


async def task_of(http: httpx.AsyncClient, url: str, task_id: str) -> dict[str, Any]:
    answer = await rpc(http, url, "GetTask", {"id": task_id})
    assert "result" in answer, answer
    return dict(answer["result"])


@pytest.mark.parametrize("method", ["SubscribeToTask", "SendStreamingMessage"])
async def test_a_cut_jsonrpc_stream_resumes_after_the_last_id_on_sqlite(
    method: str, agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    params = {"message": user_message(LONG)}
    async with asyncio.timeout(90):
        before = await cut_after(http, agent.jsonrpc, jsonrpc_body("SendStreamingMessage", params), SEEN_BEFORE_CUT)
        last = [e.id for e in before if e.id is not None][-1]
        task_id = before[0].body["task"]["id"]
        again = {"id": task_id} if method == "SubscribeToTask" else params  # the same message, sent again
        after = await resumed_jsonrpc(http, agent.jsonrpc, method, again, last)
    assert isinstance(after, list), after
    check_exactly_once(before, after, await task_of(http, agent.jsonrpc, task_id))


async def test_a_cut_rest_stream_resumes_and_an_ended_task_resumes_to_its_end(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    seen: list[Event] = []
    async with asyncio.timeout(90):
        url = agent.rest + "/message:stream"
        async with http.stream("POST", url, json={"message": user_message(LONG)}, headers=V1) as response:
            async for event in sse(response, jsonrpc=False):
                seen.append(event)
                if sum(e.id is not None for e in seen) == SEEN_BEFORE_CUT:
                    break
        task_id = seen[0].body["task"]["id"]
        await asyncio.sleep(6)  # the turn ends while no one listens
        last = [e.id for e in seen if e.id is not None][-1]
        subscribe = f"{agent.rest}/tasks/{task_id}:subscribe"
        async with http.stream("GET", subscribe, headers={**V1, "Last-Event-ID": last}) as response:
            assert response.status_code == 200, await response.aread()
            after = [event async for event in sse(response, jsonrpc=False)]
        check_exactly_once(seen, after, await task_of(http, agent.jsonrpc, task_id))
        end = after[-1].id
        assert end is not None
        async with http.stream("GET", subscribe, headers={**V1, "Last-Event-ID": end}) as response:
            assert response.status_code == 200
            assert [event async for event in sse(response, jsonrpc=False)] == [], "nothing follows the end"


@pytest.fixture(params=["sqlite", "postgresql"])
async def asking(
    request: pytest.FixtureRequest, make_settings: SettingsFactory, offline_model: OfflineModel
) -> AsyncIterator[ServedAgent]:
    """An agent whose shield asks a person before every command; its state on SQLite, or on PostgreSQL (where a
    resumed stream is read back from the database's event log)."""
    shared = {"state": {"url": request.getfixturevalue("postgres_url")}} if request.param == "postgresql" else {}
    async with serving(make_settings(shield=ShieldConfig(), **shared), offline_model) as served:
        yield served


async def test_a_stream_that_ended_at_input_required_resumes_after_the_approval(
    asking: ServedAgent, http: httpx.AsyncClient
) -> None:
    async with asyncio.timeout(90):
        body = jsonrpc_body("SendStreamingMessage", bash_params("touch approved.txt"))
        async with http.stream("POST", asking.jsonrpc, json=body, headers=V1) as response:
            asked = [event async for event in sse(response, jsonrpc=True)]
        assert final_state([e.body for e in asked]) == "TASK_STATE_INPUT_REQUIRED"
        task = asked[0].body["task"]
        last = asked[-1].id
        assert last is not None, "the pause has its id"
        approval = approval_of([e.body for e in asked])
        answer = answer_params(task, data={"approval": approval["id"], "option": "allow_once"})
        answer["configuration"] = {"returnImmediately": True}
        assert "result" in await rpc(http, asking.jsonrpc, "SendMessage", answer)
        after = await resumed_jsonrpc(http, asking.jsonrpc, "SubscribeToTask", {"id": task["id"]}, last)
    assert isinstance(after, list), after
    assert after and all(e.id is not None for e in after)
    assert final_state([e.body for e in after]) == "TASK_STATE_COMPLETED"
    assert not any(
        e.body.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_INPUT_REQUIRED" for e in after
    ), "the pause itself is not sent again"
    assert (asking.workdir / "approved.txt").exists()


async def test_ids_that_are_not_ones_to_resume_from_are_refused(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    async with asyncio.timeout(60):
        first = await stream(http, agent.jsonrpc, {"message": user_message("one")})
        second = await stream(http, agent.jsonrpc, {"message": user_message("two")})
        one, two = first[0]["task"]["id"], second[0]["task"]["id"]
        body = jsonrpc_body("SendStreamingMessage", {"message": user_message(LONG)})
        async with http.stream("POST", agent.jsonrpc, json=body, headers=V1) as response:
            ids = [e.id async for e in sse(response, jsonrpc=True) if e.id]
        other = ids[1].rpartition(":")[0]
        cases = {
            "garbage": ("not-an-id", "is not an event id this agent gave"),
            "another task's": (ids[1], f"is an event of task {other}, but this request names task {one}"),
            "never given": (f"{one}:999999999999999999999", "that this agent still holds"),
        }
        for name, (last, sentence) in cases.items():
            answer = await resumed_jsonrpc(http, agent.jsonrpc, "SubscribeToTask", {"id": one}, last)
            assert isinstance(answer, dict) and answer["error"]["code"] == -32602, (name, answer)
            assert sentence in answer["error"]["message"], (name, answer)
        new = {"message": user_message('[[tool:bash {"command": "touch never.txt"}]]')}  # a message never sent
        answer = await resumed_jsonrpc(http, agent.jsonrpc, "SendStreamingMessage", new, ids[1])
        assert answer["error"]["code"] == -32602 and "is not one" in answer["error"]["message"], answer
        assert not (agent.workdir / "never.txt").exists(), "refused, and not run either"
        rest = await http.get(f"{agent.rest}/tasks/{two}:subscribe", headers={**V1, "Last-Event-ID": "x:1"})
        assert rest.status_code == 400 and "x:1" in rest.text, rest.text


def grpc_event(response: Any) -> Event:
    body = json_format.MessageToDict(response)
    [event] = body.values()
    return Event(event.get("metadata", {}).get(EVENT_ID_KEY), body)


async def test_a_cut_grpc_stream_resumes_with_the_last_id_in_the_call_metadata(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    version = ("a2a-version", "1.0")
    async with serving(make_settings(auto_approve=True, server={"grpc_port": 0}), offline_model) as served:
        card = await A2ACardResolver(http, served.url).get_agent_card()
        [target] = {i.url for i in card.supported_interfaces if i.protocol_binding == "GRPC"}
        request = json_format.ParseDict({"message": user_message(LONG)}, SendMessageRequest())
        async with asyncio.timeout(90), grpc.aio.insecure_channel(target) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            call = stub.SendStreamingMessage(request, metadata=(version,))
            before: list[Event] = []
            async for response in call:
                before.append(grpc_event(response))
                if sum(e.id is not None for e in before) == SEEN_BEFORE_CUT:
                    break
            call.cancel()  # the stream cut mid-turn: gRPC resets it
            assert final_state([e.body for e in before]) == "TASK_STATE_WORKING"
            task_id = before[0].body["task"]["id"]
            last = [e.id for e in before if e.id is not None][-1]
            assert last is not None
            again = stub.SubscribeToTask(
                SubscribeToTaskRequest(id=task_id), metadata=(version, ("last-event-id", last))
            )
            after = [grpc_event(response) async for response in again]
            refused = stub.SubscribeToTask(
                SubscribeToTaskRequest(id=task_id), metadata=(version, ("last-event-id", "x"))
            )
            with pytest.raises(grpc.aio.AioRpcError) as error:
                [_ async for _ in refused]
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "'x' is not an event id this agent gave" in str(error.value.details())
            task = json_format.MessageToDict(await stub.GetTask(GetTaskRequest(id=task_id), metadata=(version,)))
    check_exactly_once(before, after, task)


async def test_a_stream_cut_on_one_replica_resumes_on_another_from_postgresql(
    tmp_path: Path, make_settings: SettingsFactory, postgres_url: str, http: httpx.AsyncClient
) -> None:
    """Replica b never ran the task: what it sends comes from the events replica a wrote to the database."""
    started: list[Replica] = []
    try:
        for name in ("a", "b"):
            path, url = replica_config(tmp_path, make_settings, postgres_url, name, lease=30)
            started.append(Replica(name, url, await start_serve(path)))
        for replica in started:
            await wait_healthy(http, replica.url)
        a, b = started
        async with asyncio.timeout(90):
            body = jsonrpc_body("SendStreamingMessage", {"message": user_message(LONG)})
            before = await cut_after(http, a.jsonrpc, body, SEEN_BEFORE_CUT)
            task_id = before[0].body["task"]["id"]
            last = [e.id for e in before if e.id is not None][-1]
            assert last is not None
            after = await resumed_jsonrpc(http, b.jsonrpc, "SubscribeToTask", {"id": task_id}, last)
            assert isinstance(after, list), after
            check_exactly_once(before, after, await task_of(http, b.jsonrpc, task_id))
            unknown = await resumed_jsonrpc(http, b.jsonrpc, "SubscribeToTask", {"id": task_id}, f"{task_id}:9999")
            assert unknown["error"]["code"] == -32602 and "still holds" in unknown["error"]["message"], unknown
    finally:
        await stop(started)


async def test_another_callers_task_is_not_found_whatever_its_ids(
    make_settings: SettingsFactory,
    offline_model: OfflineModel,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The journal holds every caller's events: a resume still shows a caller only its own tasks."""
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    async with serving(make_settings(auto_approve=True, auth=AUTH), offline_model) as served, asyncio.timeout(60):
        body = jsonrpc_body("SendStreamingMessage", {"message": user_message("the orchestrator's")})
        async with http.stream("POST", served.jsonrpc, json=body, headers={**V1, **bearer(ORCHESTRATOR_KEY)}) as r:
            ids = [e.id async for e in sse(r, jsonrpc=True) if e.id]
        task_id = ids[0].rpartition(":")[0]
        resumed = jsonrpc_body("SubscribeToTask", {"id": task_id})
        for key, found in [(CI_KEY, False), (ORCHESTRATOR_KEY, True)]:
            headers = {**V1, **bearer(key), "Last-Event-ID": ids[0]}
            async with http.stream("POST", served.jsonrpc, json=resumed, headers=headers) as r:
                if found:
                    assert [e.id async for e in sse(r, jsonrpc=True)] == ids[1:], "its owner gets the rest"
                else:
                    answer = json.loads(await r.aread())
                    assert answer["error"]["code"] == -32001, answer  # TaskNotFound: as GetTask answers it
