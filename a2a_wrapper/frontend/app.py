"""The A2A front end: a2a-sdk's own routes (card, JSON-RPC, REST, SSE) on Starlette, plus /health and /metrics.

The card, /health and /metrics are open. Every other path is an A2A method behind the guards: the caller's key
(when callers are configured), then the body limit — a request without a key is refused before its body is read.
"""

import json
import time
from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler, RequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import TaskStore
from a2a.types import AgentCard
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from a2a_wrapper.backends.base import Backend
from a2a_wrapper.config.settings import AuthSettings
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.frontend.auth import CallContextBuilder, Callers, authentication
from a2a_wrapper.frontend.card import CARD_PATH, JSONRPC_PATH, REST_PATH
from a2a_wrapper.frontend.executor import TurnExecutor
from a2a_wrapper.frontend.http_edge import LastModified, SlashFree, replay
from a2a_wrapper.frontend.jsonrpc_edge import JsonRpcEdge
from a2a_wrapper.frontend.metrics import CONTENT_TYPE, AgentMetrics

# A card changes only when its agent restarts on a new config; a client past max-age revalidates with the ETag.
CARD_CACHE = "public, max-age=300"


def build_app(
    card: AgentCard,
    handler: RequestHandler,
    backend: Backend,
    max_body_bytes: int,
    auth: AuthSettings | None = None,
    metrics: AgentMetrics | None = None,
    runtime: dict[str, Any] | None = None,
) -> ASGIApp:
    """`handler` answers the A2A methods (see `request_handler`); `runtime` (where the backend runs and what
    bounds it) is shown on /health."""
    callers = Callers.from_settings(auth or AuthSettings())  # the keys are read here, at start
    if bool(card.security_requirements) != bool(callers):  # fail closed: never open while the card asks for a key
        raise ConfigError("auth: the card and the front end disagree on callers (build both from the same settings)")
    context_builder = CallContextBuilder()

    async def health(request: Request) -> JSONResponse:
        backend_status = await backend.health()
        healthy = bool(backend_status.get("healthy"))
        body: dict[str, Any] = {"status": "ok" if healthy else "degraded", "frontend": "ok", "backend": backend_status}
        if runtime is not None:
            body["runtime"] = runtime
        return JSONResponse(body, status_code=200 if healthy else 503)

    async def scrape(request: Request) -> Response:
        assert metrics is not None
        return Response(await metrics.exposition(), media_type=CONTENT_TYPE)

    a2a_routes = [
        *create_jsonrpc_routes(handler, JSONRPC_PATH, context_builder=context_builder, enable_v0_3_compat=True),
        *create_rest_routes(handler, context_builder=context_builder, enable_v0_3_compat=True, path_prefix=REST_PATH),
    ]
    guards = [
        *authentication(callers),
        Middleware(BodyLimit, limit=max_body_bytes),
        Middleware(JsonRpcEdge, path=JSONRPC_PATH),
    ]
    app = Starlette(
        routes=[
            *create_agent_card_routes(card, card_url=CARD_PATH, cache_control=CARD_CACHE),
            Route("/health", health, methods=["GET"]),
            *([Route("/metrics", scrape, methods=["GET"])] if metrics is not None else []),
            Mount("", routes=a2a_routes, middleware=guards),  # everything else, the SDK's tenant paths included
        ]
    )
    return SlashFree(LastModified(app, CARD_PATH, time.time()))


def request_handler(card: AgentCard, executor: TurnExecutor, task_store: TaskStore) -> DefaultRequestHandler:
    """a2a-sdk's handler of the A2A methods; its `aclose` ends the tasks it keeps (after the turns have ended)."""
    return DefaultRequestHandler(agent_executor=executor, task_store=task_store, agent_card=card)


class BodyLimit:
    """Refuses request bodies over the limit with 413; never truncates them."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self._app = app
        self._limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._limit:
            await self._refuse(scope, send)
            return
        body = await self._read_all(receive)
        if body is None:
            await self._refuse(scope, send)
            return
        await self._app(scope, replay(body, receive), send)

    async def _read_all(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        text = f"Request body larger than the limit of {self._limit} bytes; nothing was processed."
        payload: dict[str, Any]
        if scope.get("path") == JSONRPC_PATH:
            payload = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": text}}
        else:
            payload = {"error": {"code": 413, "status": "INVALID_ARGUMENT", "message": text}}
        body = json.dumps(payload).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
