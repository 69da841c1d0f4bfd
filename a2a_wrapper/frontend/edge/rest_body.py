"""A REST body nested past the JSON depth limit, or holding a number no A2A object can hold, is refused with 400
before anything parses it.

a2a-sdk's REST routes (and the message edge, counting parts) parse with Python's recursive parsers: a body
nested a thousand deep raised RecursionError there, a 500 and a traceback in the log. A number past a double's
range (`1e400`) was read as Infinity into the stored task, whose every read then failed (`json_numbers`). The
JSON-RPC edge refuses both with its own errors; here the REST binding does, in its own error shape (the SDK's
for a body that is not JSON: 400, INVALID_ARGUMENT, INVALID_REQUEST).
"""

import json

from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import InvalidRequestError
from starlette.types import ASGIApp, Receive, Scope, Send

from a2a_wrapper.frontend.edge.http_edge import read_body, replay
from a2a_wrapper.frontend.edge.json_depth import TOO_DEEP, nests_past
from a2a_wrapper.frontend.edge.json_numbers import NotJson, loads

WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


class RestBodyEdge:
    def __init__(self, app: ASGIApp, jsonrpc_path: str) -> None:
        self._app = app
        self._jsonrpc_path = jsonrpc_path  # the JSON-RPC edge answers its own

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in WITH_BODY or scope.get("path") == self._jsonrpc_path:
            await self._app(scope, receive, send)
            return
        body = await read_body(receive)
        refusal = _refusal(body)
        if refusal is None:
            await self._app(scope, replay(body, receive), send)
            return
        payload = build_rest_error_payload(InvalidRequestError(message=refusal))
        answer = json.dumps(payload).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": answer})


def _refusal(body: bytes) -> str | None:
    """What is wrong with the body, if it is one of these; any other body, JSON or not, is the SDK's to judge."""
    if nests_past(body):
        return TOO_DEEP
    try:
        loads(body.decode("utf-8"))
    except NotJson as exc:
        return f"Invalid Request: {exc}"
    except ValueError:
        pass
    return None
