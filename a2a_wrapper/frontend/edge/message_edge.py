"""Too many parts are refused before a2a-sdk parses the message.

The SDK turns a request's JSON into protobuf in Python on the event loop: 100,000 parts (3 MB) hold the loop for
seconds, /health included, before any handler could count them. Here the body is counted first, in C where it can
be: a body with no more `{` than server.max_parts cannot hold more parts (each part is an object) and goes on
untouched; another is parsed once and its message's parts counted. The refusal is the SDK's own invalid-params
error (JSON-RPC -32602, REST 400) with MessageLimits' sentence; the handler checks every binding again (gRPC).
"""

import json
from typing import Any

from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import InvalidParamsError
from starlette.types import ASGIApp, Receive, Scope, Send

from a2a_wrapper.frontend.edge.http_edge import read_body, replay
from a2a_wrapper.frontend.handler.message_limits import MessageLimits

SEND_METHODS = {"SendMessage", "SendStreamingMessage", "message/send", "message/stream"}
REST_SENDS = ("/message:send", "/message:stream")


class MessageEdge:
    def __init__(self, app: ASGIApp, limits: MessageLimits, jsonrpc_path: str) -> None:
        self._app = app
        self._limits = limits
        self._jsonrpc_path = jsonrpc_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        rpc = path == self._jsonrpc_path
        if scope["type"] != "http" or scope.get("method") != "POST" or not (rpc or path.endswith(REST_SENDS)):
            await self._app(scope, receive, send)
            return
        body = await read_body(receive)
        if body.count(b"{") > self._limits.max_parts:
            refusal = self._refusal(body, rpc)
            if refusal is not None:
                await _answer(send, *refusal)
                return
        await self._app(scope, replay(body, receive), send)

    def _refusal(self, body: bytes, rpc: bool) -> tuple[int, dict[str, Any]] | None:
        try:
            request = json.loads(body)
        except ValueError:
            return None  # the SDK's own parse error
        message = _message_of(request, rpc)
        parts = message.get("parts", message.get("content")) if isinstance(message, dict) else None
        try:
            self._limits.check_parts(len(parts) if isinstance(parts, list) else 0)
        except InvalidParamsError as exc:
            if rpc:
                return 200, build_error_response(request.get("id"), exc)
            return 400, build_rest_error_payload(exc)
        return None


def _message_of(request: Any, rpc: bool) -> Any:
    if not isinstance(request, dict):
        return None
    if not rpc:
        return request.get("message")
    params = request.get("params")
    if request.get("method") not in SEND_METHODS or not isinstance(params, dict):
        return None
    return params.get("message")


async def _answer(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
