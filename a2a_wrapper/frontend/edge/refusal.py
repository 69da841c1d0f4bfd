"""Refusals the front end writes itself, before a2a-sdk sees the request, in the shape of the request's binding:
a JSON-RPC error object on the JSON-RPC path, a `google.rpc.Status`-shaped body anywhere else (REST, the card,
the fleet's registry). The body limit, the connection cap and the key check (auth.py) all answer through here.

Each carries its reason as a2a-sdk carries its own errors' (JSON-RPC `data`, REST `details`): a list holding one
`google.rpc.ErrorInfo`. The reason is not one of A2A's, so its domain is this product's, not `a2a-protocol.org`.
"""

import json
from dataclasses import dataclass
from typing import Any

from a2a.utils.error_handlers import ERROR_INFO_TYPE
from starlette.types import Scope, Send

from a2a_wrapper.frontend.card import JSONRPC_PATH

DOMAIN = "a2a-wrapper"  # ErrorInfo's domain for the reasons below


@dataclass(frozen=True)
class Refusal:
    http_status: int
    rpc_code: int  # -32600 when the request itself is at fault; -32000 (JSON-RPC's generic server error) otherwise
    reason: str  # the canonical status name a REST body carries, and the ErrorInfo's reason
    retry_after: int | None = None  # seconds, when trying again soon can succeed


TOO_LARGE = Refusal(413, -32600, "INVALID_ARGUMENT")
TOO_SLOW = Refusal(408, -32600, "DEADLINE_EXCEEDED")
BUSY = Refusal(503, -32000, "UNAVAILABLE", retry_after=1)
UNAUTHENTICATED = Refusal(401, -32000, "UNAUTHENTICATED")  # A2A's own codes (-32001…) have none for this


async def refuse(scope: Scope, send: Send, refusal: Refusal, text: str, *, close: bool = False) -> None:
    """Answers the request with `refusal` and `text`; `close` ends the connection after the answer (its request
    was not read whole, so the connection cannot carry another)."""
    body = refusal_body(scope.get("path", ""), refusal, text)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    if refusal.retry_after is not None:
        headers.append((b"retry-after", str(refusal.retry_after).encode()))
    await send({"type": "http.response.start", "status": refusal.http_status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def refusal_body(path: str, refusal: Refusal, text: str) -> bytes:
    """The JSON body of `refusal` saying `text`, in the shape of the binding at `path`."""
    details = [{"@type": ERROR_INFO_TYPE, "reason": refusal.reason, "domain": DOMAIN, "metadata": {}}]
    payload: dict[str, Any]
    if path == JSONRPC_PATH:
        error = {"code": refusal.rpc_code, "message": text, "data": details}
        payload = {"jsonrpc": "2.0", "id": None, "error": error}
    else:
        payload = {
            "error": {"code": refusal.http_status, "status": refusal.reason, "message": text, "details": details}
        }
    return json.dumps(payload).encode()


def client_name(client: tuple[str, int] | None) -> str:
    """Who a refusal was for, as a log line names them (the ASGI scope's or the connection's `client`)."""
    return f"{client[0]}:{client[1]}" if client else "an unknown client"
