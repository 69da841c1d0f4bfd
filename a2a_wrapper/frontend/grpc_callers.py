"""Who is calling over gRPC: the same keys, the same check and the same caller names as the HTTP routes.

A call's metadata is read as the HTTP connection `KeyAuthentication` reads (`authorization: Bearer <key>` or
`x-api-key: <key>`), so both bindings admit and refuse by one piece of code with the same sentences. A refused
call ends UNAUTHENTICATED before the A2A method runs. The admitted caller's name reaches the SDK's handler as
`ServerCallContext.user` (its task stores scope every task to that owner) through a context variable: gRPC runs
an interceptor and the method it guards in one `contextvars.Context` per call.

Each service also holds a call to the A2A version it speaks, as the HTTP routes hold a request (A2A §3.6.2): the
`a2a-version` metadata is judged by a2a-sdk's own rule for the `A2A-Version` header (`validate_version`: the same
major version; none at all is 0.3), so `a2a-version: 99.0`, or a 1.0 call without the metadata, is refused with
VersionNotSupported before the A2A method runs, in the status the SDK gives that error (FAILED_PRECONDITION, as
§5.4's table says).
"""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from functools import cache
from typing import Any

import grpc
import grpc.aio
from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.grpc_handler import DefaultGrpcServerCallContextBuilder
from a2a.server.routes.common import StarletteUser
from a2a.utils.constants import PROTOCOL_VERSION_1_0, VERSION_HEADER
from a2a.utils.errors import VersionNotSupportedError
from a2a.utils.version_validator import validate_version
from starlette.authentication import AuthenticationError
from starlette.requests import HTTPConnection

from a2a_wrapper.frontend.auth import CREDENTIAL_HEADERS, Callers, KeyAuthentication

_CALLER: ContextVar[User | None] = ContextVar("grpc_caller", default=None)
GRPC_CALL = "grpc"  # in a call context's state: the call came over gRPC


class KeyCheck(grpc.aio.ServerInterceptor):
    """Lets a call in only with one caller's key; the caller then becomes the call's user."""

    def __init__(self, callers: Callers) -> None:
        self._authentication = KeyAuthentication(callers)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:  # no such method: gRPC answers UNIMPLEMENTED, as the HTTP side's 404 needs no key
            return None
        method = details.method
        if handler.unary_unary is not None:
            call = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                await self._admit(method, context)
                return await call(request, context)

            return handler._replace(unary_unary=unary)
        stream = handler.unary_stream  # A2A's services have no client-streaming method

        async def streaming(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            await self._admit(method, context)
            async for response in stream(request, context):
                yield response

        return handler._replace(unary_stream=streaming)

    async def _admit(self, method: str, context: grpc.aio.ServicerContext) -> None:
        try:
            _, user = await self._authentication.authenticate(_as_http(method, context))
        except AuthenticationError as exc:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
        else:
            _CALLER.set(StarletteUser(user))


def _as_http(method: str, context: grpc.aio.ServicerContext) -> HTTPConnection:
    """The call as the HTTP connection the key check reads: its text metadata as headers, its peer as client."""
    headers = [(key.encode("latin-1"), value.encode("latin-1")) for key, value in _text_metadata(context)]
    scope = {"type": "http", "path": method, "headers": headers, "client": _peer(context.peer())}
    return HTTPConnection(scope)


def _text_metadata(context: grpc.aio.ServicerContext) -> list[tuple[str, str]]:
    # `-bin` keys carry bytes; no key or header the front end reads is one of them
    return [(key, value) for key, value in context.invocation_metadata() or () if isinstance(value, str)]


def _peer(peer: str) -> tuple[str, int] | None:
    """`ipv4:127.0.0.1:5000` or `ipv6:[::1]:5000` as (host, port); None for other transports."""
    family, _, address = peer.partition(":")
    host, _, port = address.rpartition(":")
    return (host, int(port)) if family in ("ipv4", "ipv6") and port.isdigit() else None


NEEDS_VERSION = (
    "A2A 1.0's gRPC service needs the metadata `a2a-version: 1.0` on every call (a call without it is read as "
    "A2A 0.3, whose gRPC service is a2a.v1.A2AService)"
)


class CallerContextBuilder(DefaultGrpcServerCallContextBuilder):
    """The SDK's builder with the admitted caller as the user and, as on HTTP, the metadata minus credentials as
    `state["headers"]` (the SDK's `grpc_context` is left out: through it the key would reach the handler). A call
    whose `a2a-version` is not `version` (the service's) raises VersionNotSupportedError: the SDK's gRPC handlers
    build the context inside their error handling, so the call ends with that error's status."""

    def __init__(self, version: str) -> None:
        self._version = version

    def build(self, context: grpc.aio.ServicerContext) -> ServerCallContext:
        call = super().build(context)
        call.state = {
            "headers": {k: v for k, v in _text_metadata(context) if k not in CREDENTIAL_HEADERS},
            GRPC_CALL: True,
        }
        try:
            _version_check(self._version)(call)
        except VersionNotSupportedError as exc:
            if self._version == PROTOCOL_VERSION_1_0 and not call.state["headers"].get(VERSION_HEADER.lower()):
                raise VersionNotSupportedError(message=NEEDS_VERSION) from exc
            raise
        return call

    def build_user(self, context: grpc.aio.ServicerContext) -> User:
        return _CALLER.get() or UnauthenticatedUser()


@cache
def _version_check(version: str) -> Callable[[ServerCallContext], AsyncIterator[None]]:
    """a2a-sdk's decision on a call's A2A version, the one its HTTP routes apply. Its decorator judges an async
    generator function when it is called, before the generator runs, so calling this raises at once."""

    @validate_version(version)
    async def speaks(context: ServerCallContext) -> AsyncIterator[None]:
        yield None

    return speaks
