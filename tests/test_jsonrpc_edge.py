"""What cannot be a JSON-RPC request gets JSON-RPC's own codes before a2a-sdk sees it; the rest passes as sent."""

import json
from typing import Any

import httpx
import pytest
from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from starlette.types import Receive, Scope, Send

from a2a_wrapper.frontend.edge.json_depth import MAX_DEPTH
from a2a_wrapper.frontend.edge.jsonrpc_edge import METHODS_0_3, METHODS_1_0, JsonRpcEdge
from tests.conftest import ServedAgent
from tests.helpers.a2a_wire import V1

PATH = "/a2a/jsonrpc"


class Recorder:
    """The app behind the edge: records what reached it and answers with a JSON-RPC result."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.bodies.append((await receive())["body"])
        body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


async def post(body: bytes, headers: dict[str, str] | None = None) -> tuple[httpx.Response, Recorder]:
    inner = Recorder()
    transport = httpx.ASGITransport(app=JsonRpcEdge(inner, PATH))
    async with httpx.AsyncClient(transport=transport, base_url="http://agent") as client:
        response = await client.post(PATH, content=body, headers={"A2A-Version": "1.0", **(headers or {})})
    return response, inner


def request(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "t"}, **fields}).encode()


def rpc(params: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":' + params + b"}"


def error_info(reason: str) -> list[dict[str, Any]]:
    """A JSON-RPC error's `data` as a2a-sdk writes it for an A2A error."""
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}
    return [{**info, "metadata": {}}]


DETAILS = {-32600: error_info("INVALID_REQUEST"), -32009: error_info("VERSION_NOT_SUPPORTED")}


@pytest.mark.parametrize(
    ("body", "code", "says"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"\xff"}}', -32700, "not UTF-8"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":NaN}}', -32700, "NaN is not JSON"),
        (b'{"jsonrpc":"2.0","id":-Infinity,"method":"GetTask","params":{"id":"t"}}', -32700, "-Infinity is not"),
        (b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1), -32600, f"past {MAX_DEPTH} levels"),
        (b"[" * 100_000 + b"]" * 100_000, -32600, "nest past"),
        (request(id=2**53), -32600, "the id must be"),
        (request(id=123456789012345678901234567890), -32600, "the id must be"),
        (request(id=1.5), -32600, "the id must be"),
        (request(id=True), -32600, "the id must be"),
        (request(id={"x": 1}), -32600, "the id must be"),
        (rpc(b'{"metadata": {"n": -1e400}}'), -32700, "the number -1e400 is past a double's range"),
        (rpc(b'{"n": 2e308}'), -32700, "the number 2e308 is past"),
        (rpc(b'{"n": ' + b"1" * 400 + b"}"), -32700, "(400 characters) is past a double's range"),
        (b'{"jsonrpc":"2.0","id":' + b"9" * 10_000 + b',"method":"GetTask"}', -32700, "(10000 characters) is past"),
    ],
    ids=[
        *("bad-utf8", "nan", "infinity", "deep", "very-deep", "2^53", "huge-id", "float-id", "bool-id", "object-id"),
        *("overflow", "just-past-the-range", "400-digits", "id-of-10k-digits"),
    ],
)
async def test_what_cannot_be_a_request_gets_its_code_and_never_reaches_the_sdk(
    body: bytes, code: int, says: str
) -> None:
    response, inner = await post(body)
    answer = response.json()
    assert (response.status_code, answer["jsonrpc"], answer["error"]["code"]) == (200, "2.0", code)
    assert says in answer["error"]["message"] and answer["id"] is None
    assert answer["error"].get("data") == DETAILS.get(code), "as a2a-sdk details its own errors (-32700: none)"
    assert inner.bodies == []


@pytest.mark.parametrize(
    "body",
    [
        request(id=1),
        request(id="abc"),
        request(id=None),
        request(id=-(2**53 - 1)),
        b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "id": 1}',  # in a string
        b"not json at all",  # the SDK's own parse error
        rpc(b'{"max": 1.7976931348623157e308, "min": -1e-400, "big": ' + b"9" * 308 + b"}"),  # within a double
        rpc(b'{"text": "NaN, Infinity, 1e400 and ' + b"7" * 400 + b' in a string"}'),
    ],
)
async def test_a_well_formed_request_passes_as_sent(body: bytes) -> None:
    response, inner = await post(body)
    assert inner.bodies == [body] and response.json()["result"] == {}


async def test_a_notification_runs_and_gets_no_body() -> None:
    body = request()
    response, inner = await post(body)
    assert inner.bodies == [body]
    assert response.status_code == 204 and response.content == b""


async def test_a_1_0_method_without_the_version_header_is_told_to_send_it() -> None:
    inner = Recorder()
    transport = httpx.ASGITransport(app=JsonRpcEdge(inner, PATH))
    async with httpx.AsyncClient(transport=transport, base_url="http://agent") as client:
        response = await client.post(PATH, content=request(id=7))
    answer = response.json()
    assert answer["id"] == 7 and answer["error"]["code"] == -32009 and answer["error"]["data"] == DETAILS[-32009]
    message = answer["error"]["message"]
    assert "send the header `A2A-Version: 1.0`" in message and "GetTask" in message
    assert inner.bodies == []


@pytest.mark.parametrize(
    ("method", "version", "method_1_0"),
    [
        ("tasks/get", "1.0", "GetTask"),
        ("message/send", "1.0", "SendMessage"),
        ("message/stream", "1", "SendStreamingMessage"),
        ("tasks/pushNotificationConfig/set", "2.0", "CreateTaskPushNotificationConfig"),
    ],
)
async def test_a_0_3_method_sent_as_1_0_is_told_the_1_0_method(method: str, version: str, method_1_0: str) -> None:
    response, inner = await post(request(id=5, method=method), {"A2A-Version": version})
    answer = response.json()
    assert answer["id"] == 5 and answer["error"]["code"] == -32009 and answer["error"]["data"] == DETAILS[-32009]
    message = answer["error"]["message"]
    assert f"{method} is an A2A 0.3 method" in message and f"`A2A-Version: {version}`" in message
    assert f"call {method_1_0} (A2A 1.0)" in message and "without the header" in message
    assert inner.bodies == []


@pytest.mark.parametrize("version", ["0.3", "0.2"])
async def test_a_0_3_method_sent_as_0_x_passes(version: str) -> None:
    body = request(id=6, method="tasks/get")
    response, inner = await post(body, {"A2A-Version": version})
    assert inner.bodies == [body] and response.json()["result"] == {}


def test_every_0_3_method_of_a2a_sdk_names_a_1_0_method() -> None:
    assert set(METHODS_0_3) == set(JSONRPC03Adapter.METHOD_TO_MODEL)
    assert set(METHODS_0_3.values()) <= METHODS_1_0


@pytest.mark.slow
async def test_the_agent_answers_bad_bodies_with_json_rpc_codes(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    bad_utf8 = await http.post(agent.jsonrpc, content=b'{"id":1,"\xff":1}', headers=V1)
    assert bad_utf8.json()["error"]["code"] == -32700
    deep = await http.post(agent.jsonrpc, content=b"[" * 5000 + b"]" * 5000, headers=V1)
    assert deep.json()["error"]["code"] == -32600
    notification = await http.post(agent.jsonrpc, json=json.loads(request()), headers=V1)
    assert notification.status_code == 204 and notification.content == b""
    unversioned = await http.post(agent.jsonrpc, content=request(id=3))
    assert unversioned.json()["error"]["code"] == -32009 and "A2A-Version: 1.0" in unversioned.text
    get_03 = {"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"id": "x"}}
    old_client = await http.post(agent.jsonrpc, json=get_03)
    assert old_client.json()["error"]["code"] != -32009, "0.3 methods without the header are 0.3, as before"
    as_1_0 = (await http.post(agent.jsonrpc, json=get_03, headers=V1)).json()
    assert as_1_0["error"]["code"] == -32009 and "call GetTask (A2A 1.0)" in as_1_0["error"]["message"], as_1_0
