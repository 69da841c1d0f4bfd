"""Inbound auth at the A2A boundary: named callers, each with a key read from the environment at start.

A key is accepted as `Authorization: Bearer <key>` or `X-API-Key: <key>`. Starlette's
`AuthenticationMiddleware` runs `KeyAuthentication` in front of the A2A routes; the caller's name becomes
`request.user`, which a2a-sdk turns into `ServerCallContext.user`, and its task stores scope every task to
that owner. Keys are compared in constant time, kept only as digests, and never logged.
"""

import hashlib
import hmac
import logging

from a2a.server.context import ServerCallContext
from a2a.server.routes import DefaultServerCallContextBuilder
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, SimpleUser
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from a2a_wrapper.config.settings import AuthSettings
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.frontend.card import API_KEY_HEADER
from a2a_wrapper.frontend.edge.refusal import UNAUTHENTICATED, refusal_body

log = logging.getLogger(__name__)

CREDENTIAL_HEADERS = ("authorization", API_KEY_HEADER.lower())


class Callers:
    """The configured callers and the digests of their keys."""

    def __init__(self, keys: dict[str, str]) -> None:
        # as the bytes of the environment variable (os.environ decodes them with surrogateescape)
        self._digests = [(name, _digest(key.encode("utf-8", "surrogateescape"))) for name, key in keys.items()]

    @classmethod
    def from_settings(cls, auth: AuthSettings) -> "Callers":
        """Reads each caller's key from its environment variable now; a missing or shared key stops the start."""
        keys: dict[str, str] = {}
        for caller in auth.callers:
            key = caller.key()
            if not key:
                raise ConfigError(
                    f"auth: caller {caller.name!r}: environment variable {caller.key_env} is unset or empty"
                )
            holder = next((name for name, other in keys.items() if other == key), None)
            if holder is not None:
                raise ConfigError(f"auth: callers {holder!r} and {caller.name!r} have the same key; give each its own")
            keys[caller.name] = key
        return cls(keys)

    def __bool__(self) -> bool:
        return bool(self._digests)

    def identify(self, key: bytes) -> str | None:
        """The name of the caller holding `key`, or None; every caller is compared, in constant time."""
        digest = _digest(key)
        found = None
        for name, expected in self._digests:
            if hmac.compare_digest(digest, expected):
                found = name
        return found


def _digest(key: bytes) -> bytes:
    # Equal-length digests: the comparison reveals neither a key's content nor its length.
    return hashlib.sha256(key).digest()


class KeyAuthentication(AuthenticationBackend):
    """Lets a request in only with one caller's key, as a bearer token or in the API-key header."""

    def __init__(self, callers: Callers) -> None:
        self._callers = callers

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser]:
        presented = _presented_keys(conn)
        if not presented:
            raise AuthenticationError(
                f"This agent needs a caller's key: send `Authorization: Bearer <key>` or `{API_KEY_HEADER}: <key>`."
            )
        names = {self._callers.identify(key) for key in presented}
        if None in names:
            reason = "The key given matches no caller of this agent."
        elif len(names) > 1:
            reason = "The keys given belong to different callers; send one."
        else:
            return AuthCredentials(["authenticated"]), SimpleUser(str(names.pop()))
        log.info("refused a request to %s from %s: %s", conn.url.path, _client(conn), reason)
        raise AuthenticationError(reason)


HTTP_WHITESPACE = " \t"  # RFC 9110's OWS: what may surround a header value; `str.strip()` also drops \xa0, \x85


def bearer_token(headers: Headers) -> bytes | None:
    """The `Authorization: Bearer` token, as the bytes sent (Starlette decodes header values as latin-1)."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    token = token.strip(HTTP_WHITESPACE)
    return token.encode("latin-1") if scheme.lower() == "bearer" and token else None


def _presented_keys(conn: HTTPConnection) -> list[bytes]:
    """The keys the request carries: its bearer token, its API-key header."""
    bearer = bearer_token(conn.headers)
    keys = [bearer] if bearer is not None else []
    api_key = conn.headers.get(API_KEY_HEADER, "").strip(HTTP_WHITESPACE)
    if api_key:
        keys.append(api_key.encode("latin-1"))
    return keys


def _client(conn: HTTPConnection) -> str:
    return f"{conn.client.host}:{conn.client.port}" if conn.client else "an unknown address"


def refuse(conn: HTTPConnection, exc: AuthenticationError) -> Response:
    """401 with a Bearer challenge; the body in the shape of the binding that was called."""
    challenge = 'Bearer error="invalid_token"' if _presented_keys(conn) else "Bearer"
    return Response(
        refusal_body(conn.url.path, UNAUTHENTICATED, str(exc)),
        status_code=UNAUTHENTICATED.http_status,
        media_type="application/json",
        headers={"WWW-Authenticate": challenge},
    )


def authentication(callers: Callers) -> list[Middleware]:
    """The middleware guarding the A2A routes; none when no caller is configured (everyone is let in)."""
    if not callers:
        return []
    return [Middleware(AuthenticationMiddleware, backend=KeyAuthentication(callers), on_error=refuse)]


def caller_of(context: ServerCallContext | None) -> str:
    """The authenticated caller's name (the owner a2a-sdk's stores scope its tasks to), "" when auth is off."""
    return context.user.user_name if context is not None and context.user.is_authenticated else ""


class CallContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's builder, minus the credential headers: a key goes no further than the front end."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        headers = context.state.get("headers", {})
        for name in CREDENTIAL_HEADERS:
            headers.pop(name, None)
        return context
