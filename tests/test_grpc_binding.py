"""A2A's gRPC binding, through a2a-sdk's own gRPC client, against real OpenCode on the offline model: the card
lists it with its real port, and it answers as JSON-RPC does (same tasks, states, approvals, callers, limits).
Its connection bounds are HTTP's, checked with raw sockets: silent, trickling and idle connections are closed at
their deadline, connections past the cap at once, and a stream longer than every deadline arrives whole."""

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import grpc
import grpc.aio
import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.compat.v0_3 import a2a_v0_3_pb2, a2a_v0_3_pb2_grpc
from a2a.server.request_handlers import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
    a2a_pb2_grpc,
)
from a2a.utils.errors import TaskNotFoundError
from google.protobuf import json_format, struct_pb2
from google.rpc import error_details_pb2, status_pb2

from a2a_wrapper.agent import running_agent
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.frontend.card import build_card
from a2a_wrapper.frontend.grpc_binding import grpc_port
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.ports import bind_port
from a2a_wrapper.shield import ShieldConfig
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import answer_text, approval_of, final_state, rpc, status_text, stream, user_message
from tests.helpers.auth import AUTH, CI_KEY, KEYS, ORCHESTRATOR_KEY, bearer
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.tool_messages import bash_directive

SMALL_BODY = 64 * 1024


# --- the card (pure) ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ({}, []),
        ({"grpc_port": 0}, []),  # not bound yet: a card built from the config alone lists no unreachable port
        ({"grpc_port": 50051}, ["127.0.0.1:50051"]),
        ({"host": "0.0.0.0", "port": 9000, "grpc_port": 50051}, ["127.0.0.1:50051"]),
        ({"host": "::1", "grpc_port": 50051}, ["[::1]:50051"]),
        ({"advertise_url": "https://agents.example.com/reviewer", "grpc_port": 443}, ["agents.example.com:443"]),
    ],
)
def test_the_card_lists_grpc_for_both_versions_at_host_and_port(server: dict[str, Any], expected: list[str]) -> None:
    card = build_card(AgentSettings(card=CardSettings(name="card-only"), server=ServerSettings(**server)))
    grpc_interfaces = [(i.url, i.protocol_version) for i in card.supported_interfaces if i.protocol_binding == "GRPC"]
    assert grpc_interfaces == [(url, version) for url in expected for version in ("1.0", "0.3")]
    assert card.supported_interfaces[0].protocol_binding == "JSONRPC", "gRPC never becomes the preferred binding"


def test_a_taken_grpc_port_stops_the_start_with_a_sentence(tmp_path: Path) -> None:
    with bind_port("127.0.0.1", 0, "test") as taken:
        taken.listen()
        port = taken.getsockname()[1]
        settings = AgentSettings(
            card=CardSettings(name="clash"),
            server=ServerSettings(grpc_port=port),
            state_dir=tmp_path,
            auto_approve=True,
        )

        async def start() -> None:
            async with running_agent(settings):
                pytest.fail("the agent started on a taken gRPC port")

        with pytest.raises(ConfigError, match=rf"server.grpc_port: cannot listen on 127.0.0.1:{port}"):
            asyncio.run(asyncio.wait_for(start(), 30))


# --- connection bounds (raw sockets) ------------------------------------------------------------------------------

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # an empty SETTINGS frame: the client's side of the handshake done
GOAWAY = 7


async def no_turns() -> None:
    return None


@asynccontextmanager
async def bare_grpc(**limits: Any) -> AsyncIterator[int]:
    """The agent's gRPC binding with `limits`, on a free port; no test here makes a call, so no handler is needed."""
    settings = AgentSettings(card=CardSettings(name="bounds"), server=ServerSettings(grpc_port=0, **limits))
    async with grpc_port(settings) as binding:
        assert binding is not None
        async with binding.serving(cast(RequestHandler, None), no_turns):
            yield binding.port


async def closed_after(port: int, sent: bytes = b"", pause: float = 0.0) -> tuple[list[int], float]:
    """Connects, sends `sent` (a byte every `pause` seconds when given), and waits for the server to close: the
    types of the HTTP/2 frames it sent, and the seconds it took."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def send() -> None:
        for at in range(len(sent)) if pause else [0]:
            writer.write(sent[at : at + 1] if pause else sent)
            await writer.drain()
            await asyncio.sleep(pause)

    sending = asyncio.create_task(send())
    try:
        received = await reader.read(-1)
    finally:
        sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)
        writer.close()
    return frame_types(received), loop.time() - start


def frame_types(data: bytes) -> list[int]:
    types = []
    while len(data) >= 9:
        length = int.from_bytes(data[:3], "big")
        types.append(data[3])
        data = data[9 + length :]
    return types


@pytest.mark.parametrize(
    ("sent", "pause"),
    [(b"", 0.0), (PREFACE, 0.2), (PREFACE, 0.0)],
    ids=["nothing", "a trickled preface", "the preface without SETTINGS"],
)
async def test_a_connection_without_its_handshake_is_closed_at_the_header_deadline(sent: bytes, pause: float) -> None:
    async with asyncio.timeout(10), bare_grpc(header_timeout=0.6) as port:
        frames, seconds = await closed_after(port, sent, pause)
    assert frames[-1:] == [GOAWAY]
    assert 0.5 <= seconds < 3


async def test_an_idle_grpc_connection_is_closed_after_the_idle_timeout() -> None:
    async with asyncio.timeout(10), bare_grpc(header_timeout=0.3, idle_timeout=1.2) as port:
        frames, seconds = await closed_after(port, PREFACE + SETTINGS)
    assert frames[-1:] == [GOAWAY]
    # gRPC's idle timer may fire up to ~10% early (seen: 1.09 s of 1.2 s); the handshake deadline is at 0.3 s
    assert 0.9 <= seconds < 4, "closed for idling, not at the handshake deadline"


async def test_grpc_connections_past_the_cap_are_closed_at_once() -> None:
    async with asyncio.timeout(10), bare_grpc(max_connections=2, idle_timeout=1) as port:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        try:
            for reader, writer in held:
                writer.write(PREFACE + SETTINGS)
                assert await reader.read(9), "served: its SETTINGS came"
            frames, seconds = await closed_after(port, PREFACE + SETTINGS)
            for reader, _ in held:
                await reader.read(-1)  # the server let it go when it idled
        finally:
            for _, writer in held:
                writer.close()
        later, idled = await closed_after(port, PREFACE + SETTINGS)
    assert (frames, seconds < 0.5) == ([], True), "past the cap: closed before a byte"
    assert later[-1:] == [GOAWAY] and idled > 0.9, "under the cap again: served until it idled"


# --- helpers -----------------------------------------------------------------------------------------------------


def text_message(text: str, context_id: str = "", task_id: str = "") -> Message:
    return Message(
        message_id=uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        context_id=context_id,
        task_id=task_id,
    )


def wire(events: list[Any]) -> list[dict[str, Any]]:
    """gRPC's StreamResponses as their proto JSON: the shape JSON-RPC's `result`s have."""
    return [json_format.MessageToDict(event) for event in events]


async def card_of(http: httpx.AsyncClient, served: ServedAgent) -> AgentCard:
    return await A2ACardResolver(http, served.url).get_agent_card()


def grpc_client(card: AgentCard, streaming: bool = True, version: str = "1.0") -> Client:
    """a2a-sdk's client on the card's gRPC interface of `version` (its 0.3 transport for "0.3")."""
    chosen = AgentCard()
    chosen.CopyFrom(card)
    kept = [i for i in card.supported_interfaces if i.protocol_binding == "GRPC" and i.protocol_version == version]
    del chosen.supported_interfaces[:]
    chosen.supported_interfaces.extend(kept)
    config = ClientConfig(
        streaming=streaming, supported_protocol_bindings=["GRPC"], grpc_channel_factory=grpc.aio.insecure_channel
    )
    return ClientFactory(config).create(chosen)


async def send_all(
    client: Client,
    message: Message,
    context: ClientCallContext | None = None,
    configuration: SendMessageConfiguration | None = None,
) -> list[Any]:
    """Every StreamResponse of one send (one for a client that does not stream)."""
    request = SendMessageRequest(message=message, configuration=configuration)
    async with asyncio.timeout(60):
        return [event async for event in client.send_message(request, context=context)]


def grpc_port_of(card: AgentCard) -> int:
    ports = {int(i.url.rpartition(":")[2]) for i in card.supported_interfaces if i.protocol_binding == "GRPC"}
    assert len(ports) == 1, card.supported_interfaces
    return ports.pop()


@pytest.fixture
async def grpc_agent(make_settings: SettingsFactory, offline_model: OfflineModel) -> AsyncIterator[ServedAgent]:
    settings = make_settings(auto_approve=True, server={"grpc_port": 0, "max_body_bytes": SMALL_BODY})
    async with serving(settings, offline_model) as served:
        yield served


# --- over the wire -----------------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_the_card_shows_the_bound_port_and_grpc_answers_as_jsonrpc(
    grpc_agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    card = await card_of(http, grpc_agent)
    port = grpc_port_of(card)
    assert port != 0
    assert {(i.url, i.protocol_version) for i in card.supported_interfaces if i.protocol_binding == "GRPC"} == {
        (f"127.0.0.1:{port}", "1.0"),
        (f"127.0.0.1:{port}", "0.3"),
    }

    prompt = "[[slow:0.3]] the same on every binding"
    over_jsonrpc = await stream(http, grpc_agent.jsonrpc, {"message": user_message(prompt)})
    async with grpc_client(card) as client:
        over_grpc = wire(await send_all(client, text_message(prompt)))
    assert answer_text(over_grpc) == answer_text(over_jsonrpc) == "Offline model reply: the same on every binding"
    assert states(over_grpc) == states(over_jsonrpc)
    assert final_state(over_grpc) == "TASK_STATE_COMPLETED"

    async with grpc_client(card, streaming=False) as client:
        [unary] = await send_all(client, text_message("once, unary"))
    assert unary.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert "".join(p.text for a in unary.task.artifacts for p in a.parts) == "Offline model reply: once, unary"


def states(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each event's kind and the task state it carries (artifact chunks, as many as the model's deltas, left out)."""
    found = []
    for event in events:
        kind = next(iter(event))
        if kind == "task":
            found.append((kind, event[kind]["status"]["state"]))
        elif kind == "statusUpdate":
            found.append((kind, event[kind]["status"]["state"]))
    return found


@pytest.mark.slow
async def test_a_message_over_the_body_limit_is_refused(grpc_agent: ServedAgent, http: httpx.AsyncClient) -> None:
    port = grpc_port_of(await card_of(http, grpc_agent))
    request = SendMessageRequest(message=text_message("x" * (SMALL_BODY + 1)))
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel, asyncio.timeout(30):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(request)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert str(SMALL_BODY) in (refused.value.details() or "")


@pytest.mark.slow
async def test_get_list_subscribe_and_cancel_a_running_task(
    grpc_agent: ServedAgent, http: httpx.AsyncClient, offline_model: OfflineModel
) -> None:
    running = marker("grpc-running")
    card = await card_of(http, grpc_agent)
    async with grpc_client(card, streaming=False) as client, grpc_client(card) as streaming_client:
        request = SendMessageRequest(
            message=text_message(f"[[slow:30]] {running}"),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        [started] = await send_all(client, request.message, configuration=request.configuration)
        task_id = started.task.id
        await wait_until_the_model_receives(offline_model, running)
        async with asyncio.timeout(30):
            subscription = streaming_client.subscribe(SubscribeToTaskRequest(id=task_id))
            current = await anext(subscription)  # the task as it stands: the subscription is in place
            task = await client.get_task(GetTaskRequest(id=task_id))
            assert task.status.state == current.task.status.state == TaskState.TASK_STATE_WORKING
            listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id))
            assert [t.id for t in listed.tasks] == [task_id]
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
            events = wire([current, *[event async for event in subscription]])
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="no-such-task"))
    assert final_state(events) == "TASK_STATE_CANCELED"
    over_jsonrpc = await rpc(http, grpc_agent.jsonrpc, "GetTask", {"id": task_id})
    assert over_jsonrpc["result"]["status"]["state"] == "TASK_STATE_CANCELED", "one task, whichever binding asks"


@pytest.mark.slow
async def test_an_approval_asked_over_grpc_is_answered_over_grpc(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    settings = make_settings(shield=ShieldConfig(), server={"grpc_port": 0})  # every command asks
    async with serving(settings, offline_model) as served, grpc_client(await card_of(http, served)) as client:
        asked = wire(await send_all(client, text_message(bash_directive("touch approved.txt"))))
        approval = approval_of(asked)
        task = asked[0]["task"]
        assert not (served.workdir / "approved.txt").exists()
        answer = Message(
            message_id=uuid.uuid4().hex,
            role=Role.ROLE_USER,
            context_id=task["contextId"],
            task_id=task["id"],
            parts=[Part(data=struct_pb2.Value(struct_value=dict_struct(approval["id"])))],
        )
        resumed = wire(await send_all(client, answer))
        assert final_state(resumed) == "TASK_STATE_COMPLETED", resumed
        assert (served.workdir / "approved.txt").exists()


def dict_struct(approval_id: str) -> struct_pb2.Struct:
    answer = struct_pb2.Struct()
    answer.update({"approval": approval_id, "option": "allow_once"})
    return answer


@pytest.mark.slow
async def test_callers_need_their_key_and_see_only_their_tasks(
    make_settings: SettingsFactory,
    offline_model: OfflineModel,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    settings = make_settings(auto_approve=True, auth=AUTH, server={"grpc_port": 0})
    async with serving(settings, offline_model) as served:
        card = await card_of(http, served)
        port = grpc_port_of(card)
        for metadata, sentence in [
            ((), "needs a caller's key"),
            ((("authorization", "Bearer not-a-key"),), "matches no caller"),
            ((("x-api-key", ORCHESTRATOR_KEY), ("authorization", f"Bearer {CI_KEY}")), "different callers"),
        ]:
            code, details = await refused(port, metadata)
            assert code == grpc.StatusCode.UNAUTHENTICATED
            assert sentence in details

        orchestrator = ClientCallContext(service_parameters={"authorization": f"Bearer {ORCHESTRATOR_KEY}"})
        async with grpc_client(card, streaming=False) as client:
            [sent] = await send_all(client, text_message("mine"), orchestrator)
            mine = sent.task
            assert mine.status.state == TaskState.TASK_STATE_COMPLETED
            by_api_key = ClientCallContext(service_parameters={"x-api-key": ORCHESTRATOR_KEY})
            assert (await client.get_task(GetTaskRequest(id=mine.id), context=by_api_key)).id == mine.id
            as_ci = ClientCallContext(service_parameters={"x-api-key": CI_KEY})
            assert mine.id not in [t.id for t in (await client.list_tasks(ListTasksRequest(), context=as_ci)).tasks]

        async with httpx.AsyncClient(timeout=30, headers=bearer(CI_KEY)) as ci:
            assert (await rpc(ci, served.jsonrpc, "GetTask", {"id": mine.id}))["error"]["code"] == -32001
        async with httpx.AsyncClient(timeout=30, headers=bearer(ORCHESTRATOR_KEY)) as owner:
            assert (await rpc(owner, served.jsonrpc, "GetTask", {"id": mine.id}))["result"]["id"] == mine.id


async def refused(port: int, metadata: tuple[tuple[str, str], ...]) -> tuple[grpc.StatusCode, str]:
    """The status a GetTask with this metadata ends with, on a raw gRPC stub (no client of ours in between)."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel, asyncio.timeout(30):
        try:
            await a2a_pb2_grpc.A2AServiceStub(channel).GetTask(GetTaskRequest(id="any"), metadata=metadata)
        except grpc.aio.AioRpcError as exc:
            return exc.code(), exc.details() or ""
    pytest.fail("the call was let in")


V1_METADATA = (("a2a-version", "1.0"),)


async def refusal_of(call: Any) -> tuple[grpc.StatusCode, str, list[str]]:
    """The status, sentence and ErrorInfo reasons a refused gRPC call ends with."""
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    trailing = dict(refused.value.trailing_metadata() or ())
    status = status_pb2.Status.FromString(trailing["grpc-status-details-bin"]) if trailing else status_pb2.Status()
    reasons = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            reasons.append(info.reason)
    return refused.value.code(), refused.value.details() or "", reasons


@pytest.mark.slow
async def test_an_a2a_version_the_service_does_not_speak_is_refused_as_on_http(
    grpc_agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    port = grpc_port_of(await card_of(http, grpc_agent))
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel, asyncio.timeout(30):
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        request = SendMessageRequest(message=text_message("never run"))
        assert await refusal_of(stub.SendMessage(request, metadata=(("a2a-version", "99.0"),))) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "A2A version '99.0' is not supported by this handler. Expected version '1.0'.",
            ["VERSION_NOT_SUPPORTED"],
        )
        streamed = stub.SendStreamingMessage(request, metadata=(("a2a-version", "99.0"),))
        assert (await refusal_of(anext(aiter(streamed))))[0] == grpc.StatusCode.FAILED_PRECONDITION
        code, sentence, reasons = await refusal_of(stub.SendMessage(request))  # none: read as 0.3 (A2A §3.6.2)
        assert (code, reasons) == (grpc.StatusCode.FAILED_PRECONDITION, ["VERSION_NOT_SUPPORTED"])
        assert "needs the metadata `a2a-version: 1.0`" in sentence
        old = a2a_v0_3_pb2_grpc.A2AServiceStub(channel)  # 0.3's service, asked with 1.0
        code, sentence, _ = await refusal_of(
            old.GetTask(a2a_v0_3_pb2.GetTaskRequest(name="tasks/any"), metadata=V1_METADATA)
        )
        assert code == grpc.StatusCode.FAILED_PRECONDITION and "A2A version '1.0' is not supported" in sentence
        listed = await stub.ListTasks(ListTasksRequest(), metadata=(("a2a-version", "1.0.7"),))  # a patch is 1.0
    assert list(listed.tasks) == [], "nothing refused was run or stored"

    over_jsonrpc = await http.post(
        grpc_agent.jsonrpc,
        json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "any"}},
        headers={"A2A-Version": "99.0"},
    )
    assert over_jsonrpc.json()["error"]["code"] == -32009, "JSON-RPC refuses the same version"
    over_rest = await http.get(grpc_agent.rest + "/tasks/any", headers={"A2A-Version": "99.0"})
    assert over_rest.status_code == 400 and over_rest.json()["error"]["status"] == "FAILED_PRECONDITION"


@pytest.mark.slow
async def test_an_extended_card_the_agent_has_not_is_unsupported_and_only_a_debug_line(
    grpc_agent: ServedAgent, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    port = grpc_port_of(await card_of(http, grpc_agent))
    caplog.set_level(logging.DEBUG, logger="a2a.server.request_handlers.request_handler")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel, asyncio.timeout(30):
        card_call = a2a_pb2_grpc.A2AServiceStub(channel).GetExtendedAgentCard(
            GetExtendedAgentCardRequest(), metadata=V1_METADATA
        )
        code, sentence, reasons = await refusal_of(card_call)
    assert (code, reasons) == (grpc.StatusCode.FAILED_PRECONDITION, ["UNSUPPORTED_OPERATION"])
    assert sentence == "The agent does not support authenticated extended cards"
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("a2a.")]
    assert ("DEBUG", f"Validation failure: {sentence}") in logged
    assert not [line for line in logged if line[0] in ("WARNING", "ERROR")], "the caller's mistake, not the agent's"


@pytest.mark.slow
async def test_the_0_3_grpc_service_answers_through_the_same_tasks(
    grpc_agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    async with grpc_client(await card_of(http, grpc_agent), version="0.3") as client:
        events = wire(await send_all(client, text_message("over 0.3")))
        assert answer_text(events) == "Offline model reply: over 0.3"
        assert final_state(events) == "TASK_STATE_COMPLETED"
        task_id = events[0]["task"]["id"] if "task" in events[0] else events[0]["statusUpdate"]["taskId"]
        assert (await client.get_task(GetTaskRequest(id=task_id))).status.state == TaskState.TASK_STATE_COMPLETED
    over_jsonrpc = await rpc(http, grpc_agent.jsonrpc, "GetTask", {"id": task_id})
    assert over_jsonrpc["result"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.slow
async def test_a_graceful_stop_ends_a_running_grpc_stream_with_its_sentence(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    cut_short = marker("grpc-cut-short")
    async with serving(make_settings(auto_approve=True, server={"grpc_port": 0}), offline_model) as served:
        client = grpc_client(await card_of(http, served))
        streaming = asyncio.create_task(send_all(client, text_message(f"[[slow:30]] {cut_short}")))
        await wait_until_the_model_receives(offline_model, cut_short)
    try:
        async with asyncio.timeout(30):
            events = wire(await streaming)
    finally:
        await client.close()
    assert final_state(events) == "TASK_STATE_FAILED"
    last = [e for e in events if "statusUpdate" in e][-1]["statusUpdate"]["status"]
    assert "shut down while this turn was running" in status_text(last)


@pytest.mark.slow
async def test_a_grpc_stream_outlasting_every_deadline_arrives_whole_and_the_channel_outlives_its_idling(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    limits = {"grpc_port": 0, "header_timeout": 0.5, "body_timeout": 0.5, "idle_timeout": 0.5}
    async with serving(make_settings(auto_approve=True, server=limits), offline_model) as served:
        async with grpc_client(await card_of(http, served)) as client:
            loop = asyncio.get_running_loop()
            start = loop.time()
            events = wire(await send_all(client, text_message("[[long:4]] [[slow:4]]")))
            seconds = loop.time() - start
            await asyncio.sleep(1)  # past the idle bound: the server has closed the connection
            again = wire(await send_all(client, text_message("again")))
    assert seconds > 3  # about a second between words: longer than each deadline
    assert answer_text(events) == "word1 word2 word3 word4"
    assert final_state(events) == final_state(again) == "TASK_STATE_COMPLETED"


@pytest.mark.slow
async def test_a_number_json_has_not_is_refused_before_anything_runs_or_is_stored(
    grpc_agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    """gRPC carries Infinity and NaN as doubles; protobuf's JSON, in which tasks are stored and read, has neither:
    a task holding one failed its write and every read (as 1e400 did on JSON-RPC and REST, refused at their edge)."""
    port = grpc_port_of(await card_of(http, grpc_agent))
    deep = struct_pb2.Value()
    deep.list_value.values.add().struct_value.update({"deep": float("inf")})
    holding = {
        "metadata holds Infinity": Message(metadata={"n": float("inf")}),
        "metadata holds -Infinity": Message(metadata={"n": float("-inf")}),
        "metadata holds NaN": Message(metadata={"n": float("nan")}),
        "parts[1].data holds Infinity": Message(parts=[Part(data=deep)]),  # after the text part
        "parts[1].metadata holds NaN": Message(parts=[Part(text="hi", metadata={"n": float("nan")})]),
    }
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel, asyncio.timeout(30):
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        for says, fields in holding.items():
            message = text_message("hi")
            message.MergeFrom(fields)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.SendMessage(SendMessageRequest(message=message), metadata=V1_METADATA)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value.details()
            assert f"The message's {says}: JSON has no such number" in (refused.value.details() or ""), says
        listed = await stub.ListTasks(ListTasksRequest(), metadata=V1_METADATA)
    assert list(listed.tasks) == [], "nothing was run or stored"
