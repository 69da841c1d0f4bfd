"""The JSON-RPC body checked before a2a-sdk parses it, so that what cannot be a request gets JSON-RPC's own codes.

a2a-sdk answers a body that is not UTF-8, or nests past Python's recursion limit, with -32603 and Python's own
message; takes an id of any size; answers notifications; reads a 1.0 method sent without `A2A-Version` as 0.3,
answering "version '0.3' is not supported"; and answers a 0.3 method sent with `A2A-Version: 1.0` with -32603, an
internal error (its 0.3 adapter has no code for the version error). Here, in order:

- not UTF-8, or holding NaN or Infinity (which Python's parser takes, and JSON has not), or a number past a
  double's range (which it reads as Infinity, or past 4,300 digits cannot read: a2a-sdk answered -32603 for an id
  of 10,000 digits): -32700 (Parse error);
- arrays and objects nested deeper than MAX_DEPTH (or than the parser takes): -32600;
- an id that is neither a string, null nor an integer within ±(2^53 - 1) (what JSON numbers hold exactly): -32600;
- a notification (no id): run as sent, answered with 204 and no body, as JSON-RPC 2.0 says;
- a 1.0 method (`SendMessage`, …) without `A2A-Version: 1.0`: -32009 with a sentence saying to send the header;
- a 0.3 method (`message/send`, …) with an `A2A-Version` other than 0.x: -32009 with a sentence naming the 1.0
  method to call instead (or saying to drop the header).

Anything else, valid JSON or not, goes to the SDK as it came. The -32600 and -32009 errors are built as the SDK
builds its own, with a `google.rpc.ErrorInfo` in `data`; -32700 has none, as the SDK's own has none.
"""

import json
from typing import Any

from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.errors import InvalidRequestError, VersionNotSupportedError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from a2a_wrapper.frontend.edge.http_edge import read_body, replay
from a2a_wrapper.frontend.edge.json_depth import TOO_DEEP, nests_past
from a2a_wrapper.frontend.edge.json_numbers import NotJson, loads
from a2a_wrapper.frontend.edge.version_param import is_0_x, version_header

MAX_ID = 2**53 - 1
PARSE_ERROR = -32700
METHODS_1_0 = frozenset(JsonRpcDispatcher.METHOD_TO_MODEL)
NEEDS_VERSION = (
    "{method} is an A2A 1.0 method: send the header `A2A-Version: 1.0` with it (a request without the header is "
    "read as A2A 0.3, whose methods are message/send, message/stream, tasks/get, tasks/cancel, ...)"
)
# Each 0.3 method (a2a-sdk's 0.3 adapter serves these) and the 1.0 method that does its work.
METHODS_0_3 = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/cancel": "CancelTask",
    "tasks/resubscribe": "SubscribeToTask",
    "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigs",
    "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
    "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
}
NEEDS_NO_VERSION = (
    "{method} is an A2A 0.3 method, but the request says `A2A-Version: {version}`: call {method_1_0} (A2A 1.0) "
    "with that header, or send {method} without the header (a request without it is read as A2A 0.3)"
)


class JsonRpcEdge:
    def __init__(self, app: ASGIApp, path: str) -> None:
        self._app = app
        self._path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self._path or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        body = await read_body(receive)
        refusal, notification = _check(body, version_header(scope))
        if refusal is not None:
            await _answer(send, refusal)
            return
        await self._app(scope, replay(body, receive), _silenced(send) if notification else send)


def _check(body: bytes, version: str) -> tuple[dict[str, Any] | None, bool]:
    """(the error to answer instead of the SDK, whether the request is a notification)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _parse_error(f"Parse error: the body is not UTF-8 (byte {exc.start})"), False
    try:
        request = loads(text)
    except RecursionError:
        return _too_deep(), False
    except NotJson as exc:
        return _parse_error(f"Parse error: {exc}"), False
    except ValueError:
        return None, False  # the SDK's own parse error
    if nests_past(body):
        return _too_deep(), False
    if not isinstance(request, dict):
        return None, False
    if "id" not in request:
        return None, True
    request_id = request["id"]
    if not _valid_id(request_id):
        sentence = f"Invalid Request: the id must be a string, null or an integer of at most {MAX_ID} in size"
        return build_error_response(None, InvalidRequestError(message=sentence)), False
    return _version_refusal(request.get("method"), version, request_id), False


def _version_refusal(method: object, version: str, request_id: object) -> dict[str, Any] | None:
    """-32009 for a method of one A2A version asked for with another; a2a-sdk reads no header (or an empty one)
    as 0.3 and takes any 0.x for it."""
    if method in METHODS_1_0 and not version:
        return _version_error(NEEDS_VERSION.format(method=method), request_id)
    if isinstance(method, str) and method in METHODS_0_3 and version and not is_0_x(version):
        sentence = NEEDS_NO_VERSION.format(method=method, version=version, method_1_0=METHODS_0_3[method])
        return _version_error(sentence, request_id)
    return None


def _parse_error(sentence: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": sentence}}


def _too_deep() -> dict[str, Any]:
    return build_error_response(None, InvalidRequestError(message=TOO_DEEP))


def _version_error(sentence: str, request_id: object) -> dict[str, Any]:
    return build_error_response(request_id, VersionNotSupportedError(message=sentence))  # type: ignore[arg-type]


def _valid_id(value: object) -> bool:
    if value is None or isinstance(value, str):
        return True
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_ID


def _silenced(send: Send) -> Send:
    """A notification's answer: 204 with no body, whatever the SDK writes."""
    started = False

    async def silent(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start" and not started:
            started = True
            await send({"type": "http.response.start", "status": 204, "headers": []})
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            await send({"type": "http.response.body", "body": b""})

    return silent


async def _answer(send: Send, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
