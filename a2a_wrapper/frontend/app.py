"""The A2A front end: a2a-sdk's own routes (card, JSON-RPC, REST, SSE) on Starlette, plus /health (health.py)
and /metrics.

The card, /health and /metrics are open. The operator endpoint (/operator/v1, frontend/operator/) has its own
key, the console's. Every other path is an A2A method behind the guards: the caller's key (when callers are
configured), then the body limit — a request without a key is refused before its body is read.
"""

import time
from typing import Any

from a2a.server.cluster import VersionedTaskStore
from a2a.server.request_handlers import DefaultRequestHandler, RequestHandler
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import TaskStore
from a2a.types import AgentCard
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import ASGIApp

from a2a_wrapper.backends.base import Backend
from a2a_wrapper.config.settings import AuthSettings, ServerSettings
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.frontend import compat
from a2a_wrapper.frontend.auth import CallContextBuilder, Callers, authentication
from a2a_wrapper.frontend.card import CARD_PATH, JSONRPC_PATH, REST_PATH
from a2a_wrapper.frontend.card_route import card_routes
from a2a_wrapper.frontend.edge.body_limit import BodyLimit
from a2a_wrapper.frontend.edge.http_edge import LastModified, SlashFree
from a2a_wrapper.frontend.edge.jsonrpc_edge import JsonRpcEdge
from a2a_wrapper.frontend.edge.message_edge import MessageEdge
from a2a_wrapper.frontend.edge.method_not_allowed import method_not_allowed
from a2a_wrapper.frontend.edge.rest_body import RestBodyEdge
from a2a_wrapper.frontend.edge.rest_edge import eager_v03_streams
from a2a_wrapper.frontend.edge.rest_version import RestVersionEdge
from a2a_wrapper.frontend.edge.version_param import VersionParam
from a2a_wrapper.frontend.executor import TurnExecutor
from a2a_wrapper.frontend.handler.attempts import Attempts, ClaimedTaskIds
from a2a_wrapper.frontend.handler.delegating_handler import DelegatingHandler
from a2a_wrapper.frontend.handler.message_handler import MessageHandler
from a2a_wrapper.frontend.handler.message_limits import MessageLimits
from a2a_wrapper.frontend.handler.outage_ends import OutageEnds
from a2a_wrapper.frontend.handler.resumable_streams import ResumableStreams
from a2a_wrapper.frontend.handler.sdk_handler import SdkHandler
from a2a_wrapper.frontend.handler.task_pages import BoundedPages
from a2a_wrapper.frontend.health import health_routes
from a2a_wrapper.frontend.metrics import CONTENT_TYPE, AgentMetrics
from a2a_wrapper.frontend.sdk_logs import lower_caller_errors
from a2a_wrapper.push import Push
from a2a_wrapper.state.event_journal import EventJournal
from a2a_wrapper.state.message_ledger import MessageLedger
from a2a_wrapper.state.readiness import StateCheck

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
    body_timeout: float = 60.0,
    limits: MessageLimits | None = None,
    operator: BaseRoute | None = None,
    state: StateCheck | None = None,
) -> ASGIApp:
    """`handler` answers the A2A methods (see `request_handler`); `runtime` (where the backend runs and what
    bounds it) is shown on /health, and `state` checked there; `operator` is the console's endpoint
    (frontend/operator/routes.py)."""
    callers = Callers.from_settings(auth or AuthSettings())  # the keys are read here, at start
    if bool(card.security_requirements) != bool(callers):  # fail closed: never open while the card asks for a key
        raise ConfigError("auth: the card and the front end disagree on callers (build both from the same settings)")
    context_builder = CallContextBuilder()
    compat.install()
    lower_caller_errors()

    async def scrape(request: Request) -> Response:
        assert metrics is not None
        return Response(await metrics.exposition(), media_type=CONTENT_TYPE)

    rest_routes = eager_v03_streams(
        create_rest_routes(handler, context_builder=context_builder, enable_v0_3_compat=True, path_prefix=REST_PATH)
    )
    a2a_routes = [
        *create_jsonrpc_routes(handler, JSONRPC_PATH, context_builder=context_builder, enable_v0_3_compat=True),
        *rest_routes,
    ]
    guards = [
        *authentication(callers),
        Middleware(RestVersionEdge, base=REST_PATH, routes=rest_routes),
        Middleware(BodyLimit, limit=max_body_bytes, timeout=body_timeout),
        Middleware(JsonRpcEdge, path=JSONRPC_PATH),
        Middleware(RestBodyEdge, jsonrpc_path=JSONRPC_PATH),
        Middleware(
            MessageEdge, limits=limits or MessageLimits.from_settings(ServerSettings()), jsonrpc_path=JSONRPC_PATH
        ),
    ]
    open_routes = [
        *card_routes(card, CARD_PATH, CARD_CACHE),
        *health_routes(backend, state, runtime),
        *([Route("/metrics", scrape, methods=["GET"])] if metrics is not None else []),
        *([operator] if operator is not None else []),  # its own key, outside the callers' guards
    ]
    # everything else, the SDK's tenant paths included; no redirect to a path with a slash: SlashFree drops it
    guarded = Mount("", app=Router(a2a_routes, redirect_slashes=False), middleware=guards)
    not_found = method_not_allowed([*open_routes, *a2a_routes])
    app = Starlette(routes=[*open_routes, guarded], exception_handlers={404: not_found})
    return VersionParam(SlashFree(LastModified(app, CARD_PATH, time.time())))


def request_handler(
    card: AgentCard,
    executor: TurnExecutor,
    task_store: TaskStore | VersionedTaskStore,
    push: Push | None = None,
    ledger: MessageLedger | None = None,
    limits: MessageLimits | None = None,
    journal: EventJournal | None = None,
) -> DelegatingHandler:
    """a2a-sdk's handler of the A2A methods (as sdk_handler.py shapes them), its message methods bounded by `limits`
    and run once per messageId (message_handler.py); its `aclose` ends the tasks it keeps (after the turns have
    ended). Without `push`, the push config methods and a message that registers a webhook answer
    PushNotificationNotSupported. On shared state the store is versioned and `journal` carries the events of
    tasks other replicas run (a2a-sdk's cluster mode: subscribe and cancel across replicas), and a stream an outage
    of its database ends closes with a final status (outage_ends.py)."""
    compat.install()
    attempts = Attempts()
    sdk = DefaultRequestHandler(
        agent_executor=executor,
        task_store=attempts.watching(task_store),
        agent_card=card,
        request_context_builder=ClaimedTaskIds(),
        push_config_store=push.configs if push else None,
        push_sender=push.delivery if push else None,
        push_url_validator=push.policy.validate if push else None,
        event_stream=journal,
    )
    limits = limits or MessageLimits.from_settings(ServerSettings())
    pushes = push is not None
    handler = MessageHandler(OutageEnds(BoundedPages(SdkHandler(sdk))), attempts, ledger, limits, pushes=pushes)
    return ResumableStreams(handler, journal) if journal is not None else handler
