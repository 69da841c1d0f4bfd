"""A2A's gRPC binding (1.0 and 0.3) on its own port: gRPC needs HTTP/2, which uvicorn does not serve.

Both services run on one `grpc.aio` server through the HTTP routes' own request handler, so the three bindings
share tasks, store, approvals and limits. Two pairs: the port, taken as the agent starts (a clash is one
sentence before anything slow starts; port 0 becomes the free port the card shows), and the service, from the
handler's creation until the agent stops.

The server's limits are HTTP's, in grpc core's own terms (each checked with raw sockets, grpcio 1.85):
- `server.header_timeout` is the handshake deadline: a connection that has not sent the HTTP/2 preface and its
  SETTINGS by then (nothing at all, or a trickle) gets GOAWAY and is closed;
- `server.idle_timeout`: a connection with no call under way is sent GOAWAY after that long (a call or stream
  under way, however long, keeps it);
- `server.max_connections`: connections past it are closed as they come, and as many calls run at once (more get
  RESOURCE_EXHAUSTED);
- `server.max_body_bytes`: a larger message gets RESOURCE_EXHAUSTED.
No bound on a connection's age: it would cut the long streams of a task.
"""

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import grpc
import grpc.aio
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc
from a2a.compat.v0_3.grpc_handler import CompatGrpcHandler
from a2a.server.request_handlers import GrpcHandler, RequestHandler
from a2a.types import a2a_pb2_grpc
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0

from a2a_wrapper.config.settings import AgentSettings, ServerSettings
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.frontend.auth import Callers
from a2a_wrapper.frontend.grpc_callers import CallerContextBuilder, KeyCheck

log = logging.getLogger(__name__)

GRACE = 10.0  # seconds the running calls get at a stop, as uvicorn's graceful shutdown


class GrpcBinding:
    """One bound gRPC server; `serving` runs the A2A services on it."""

    def __init__(self, server: grpc.aio.Server, address: str, port: int, agent: str) -> None:
        self._server = server
        self._address = address
        self.port = port
        self._agent = agent
        self._started = False

    @classmethod
    def bind(cls, settings: ServerSettings, callers: Callers, agent: str) -> "GrpcBinding":
        """A server listening on `settings.host` and `settings.grpc_port`, with the key check when callers are set."""
        assert settings.grpc_port is not None
        server = grpc.aio.server(
            interceptors=[KeyCheck(callers)] if callers else [],
            options=[
                ("grpc.max_receive_message_length", settings.max_body_bytes),  # larger: RESOURCE_EXHAUSTED
                ("grpc.so_reuseport", 0),  # gRPC's default would let a second agent share the port silently
                ("grpc.server_handshake_timeout_ms", _ms(settings.header_timeout)),  # preface and SETTINGS by then
                ("grpc.max_connection_idle_ms", _ms(settings.idle_timeout)),
                ("grpc.max_allowed_incoming_connections", settings.max_connections),
            ],
            maximum_concurrent_rpcs=settings.max_connections,  # more: RESOURCE_EXHAUSTED
        )
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        try:
            port = server.add_insecure_port(f"{host}:{settings.grpc_port}")
        except RuntimeError as exc:
            raise ConfigError(
                f"agent {agent!r}: server.grpc_port: cannot listen on {host}:{settings.grpc_port} (is it taken?)"
            ) from exc
        return cls(server, f"{host}:{port}", port, agent)

    @asynccontextmanager
    async def serving(self, handler: RequestHandler, end_turns: Callable[[], Awaitable[None]]) -> AsyncIterator[None]:
        """A2A 1.0 and 0.3 answered by `handler`. At the exit no new call is taken, the running turns end with their
        sentence (their streams close with that final event) and calls still open after the grace are cut."""
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(
            GrpcHandler(handler, CallerContextBuilder(PROTOCOL_VERSION_1_0)), self._server
        )
        a2a_v0_3_pb2_grpc.add_A2AServiceServicer_to_server(
            CompatGrpcHandler(handler, CallerContextBuilder(PROTOCOL_VERSION_0_3)), self._server
        )
        await self._server.start()
        self._started = True
        log.info("agent %r serving gRPC (A2A 1.0 and 0.3) on %s", self._agent, self._address)
        try:
            yield
        finally:
            stopping = asyncio.create_task(self._server.stop(GRACE), name="grpc-stop")  # refuses new calls
            try:
                await end_turns()
            finally:
                await stopping
            log.info("agent %r stopped serving gRPC", self._agent)

    async def close(self) -> None:
        """Frees the port (stopping at once whatever still runs)."""
        if not self._started:
            await self._server.start()  # an unstarted grpc server keeps its port until it has run and stopped
        await self._server.stop(None)


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


@asynccontextmanager
async def grpc_port(settings: AgentSettings) -> AsyncIterator[GrpcBinding | None]:
    """The gRPC port taken for the agent's lifetime, or None when `server.grpc_port` is unset (gRPC off)."""
    if settings.server.grpc_port is None:
        yield None
        return
    binding = GrpcBinding.bind(settings.server, Callers.from_settings(settings.auth), settings.card.name)
    try:
        yield binding
    finally:
        await binding.close()


def with_grpc_port(settings: AgentSettings, binding: GrpcBinding | None) -> AgentSettings:
    """`settings` with the port actually bound (port 0 is a free one), which the card then shows."""
    if binding is None:
        return settings
    server = settings.server.model_copy(update={"grpc_port": binding.port})
    return settings.model_copy(update={"server": server})
