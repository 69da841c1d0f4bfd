"""The model relay: the backend's provider URL points here, and only here the provider's key is added.

The backend (sandboxed or a plain child) is given `http://127.0.0.1:PORT<base path>` as its provider and a key
that is no key of the operator's: a random token made at each start, which only this relay takes. The relay
checks it, strips every credential the request carries, adds the real one in the header the provider's wire
expects, and forwards to the real base URL (HTTPS to a cloud provider, HTTP to a loopback one), passing the
answer through chunk by chunk as it arrives (an SSE stream is never held whole).

It listens on TCP 127.0.0.1 rather than on a Unix socket: a backend under `runtime: process` can dial only TCP
(OpenCode's and Copilot's provider settings take a URL, not a socket), and the sandbox reaches it the way it
reaches any loopback endpoint its config names (the bridge forwards the port through the egress proxy). Other
processes of the host can dial the port too; the per-start token is what keeps them from spending the key.

A request is refused unless it names the relay itself (Host), a path under the provider's base path that is one
of its wire's inference endpoints (no dot segments, nothing percent-encoded) and carries the token.
"""

import hmac
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from pydantic import SecretStr
from yarl import URL

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
MAX_REQUEST = 64 * 2**20  # bytes: a long context, as a provider takes it
_CONNECT_TIMEOUT = 30.0
_READ_TIMEOUT = 600.0  # seconds without a byte from the provider: a stalled answer, not a slow one
_BEARER = ("Authorization", "Bearer ")
# Every header or query parameter a client may put a key in: none the backend sends reaches the provider.
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"}
)
CREDENTIAL_QUERY = frozenset({"key", "api_key", "api-key"})
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length"}
)
_OPENAI_ENDPOINTS = ("chat/completions", "completions", "responses", "embeddings", "models")


@dataclass(frozen=True)
class Wire:
    """How one kind of provider takes its key, and the endpoints a backend calls on it."""

    key_header: str
    key_prefix: str
    endpoints: tuple[str, ...]  # a path's last segments, under the base path
    methods: tuple[str, ...] = ()  # Gemini's form, `models/<model>:<method>`: the methods served on a model

    def serves(self, tail: str) -> bool:
        """Whether a path under the base path (`tail`, no leading slash) is one of this wire's endpoints."""
        if any(tail == endpoint or tail.endswith("/" + endpoint) for endpoint in self.endpoints):
            return True
        *_, collection, last = ["", *tail.split("/")]
        model, _, method = last.rpartition(":")
        return collection == "models" and bool(model) and method in self.methods


# The provider kinds the config knows (OpenCode's OpenAI-compatible provider, Copilot's `type`): one entry each.
WIRES = {
    "openai": Wire("Authorization", "Bearer ", _OPENAI_ENDPOINTS),
    "azure": Wire("api-key", "", _OPENAI_ENDPOINTS),
    "anthropic": Wire("x-api-key", "", ("messages", "messages/count_tokens", "models")),
    "gemini": Wire("x-goog-api-key", "", ("models",), ("generateContent", "streamGenerateContent", "countTokens")),
}


@dataclass(frozen=True)
class Upstream:
    """The real provider: its wire, its base URL and the operator's credential (a key, or a bearer token)."""

    wire: str
    base_url: str
    api_key: SecretStr | None = None
    bearer_token: SecretStr | None = None  # sent as `Authorization: Bearer` whatever the wire (Copilot's)

    def credential(self) -> tuple[str, str] | None:
        if self.bearer_token is not None:
            return _BEARER[0], _BEARER[1] + self.bearer_token.get_secret_value()
        if self.api_key is not None:
            wire = WIRES[self.wire]
            return wire.key_header, wire.key_prefix + self.api_key.get_secret_value()
        return None


class ModelRelay:
    """One agent's relay to its provider, on 127.0.0.1 at a free port; `url` and `token` are what the backend
    is given instead of the provider's URL and key."""

    def __init__(self, upstream: Upstream) -> None:
        if upstream.wire not in WIRES:
            raise ValueError(f"provider kind {upstream.wire!r} has no relay wire; known: {', '.join(WIRES)}")
        self._upstream = upstream
        self._base = URL(upstream.base_url)
        self._base_path = self._base.path.rstrip("/")
        self._wire = WIRES[upstream.wire]
        self.token = secrets.token_urlsafe(32)
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None
        self._port = 0

    @property
    def url(self) -> str:
        """The provider's base URL as the backend dials it: the same path, on the relay."""
        return f"http://{HOST}:{self._port}{self._base_path}"

    async def start(self) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT, sock_read=_READ_TIMEOUT)
        # auto_decompress off: the bytes pass as the provider sent them, Content-Encoding with them.
        # trust_env off: no HTTP(S)_PROXY or .netrc of the wrapper's environment is applied on the way.
        self._client = aiohttp.ClientSession(timeout=timeout, auto_decompress=False, trust_env=False)
        app = web.Application(client_max_size=MAX_REQUEST)
        app.router.add_route("*", "/{tail:.*}", self._relay)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, 0)
        await site.start()
        self._port = self._runner.addresses[0][1]
        log.info("model relay on %s:%d to %s", HOST, self._port, self._base.origin())

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        refusal = self._refusal(request)
        if refusal is not None:
            log.warning("model relay refused %s %s: %s", request.method, request.raw_path[:200], refusal)
            return _error(403 if refusal != _NO_TOKEN else 401, refusal)
        assert self._client is not None
        body = await request.read()
        target = self._target(request)
        try:
            async with self._client.request(
                request.method, target, headers=self._headers(request), data=body, allow_redirects=False
            ) as answer:
                return await _pass_through(request, answer)
        except aiohttp.ClientError as exc:
            log.warning("model relay: %s unreachable: %s", self._base.origin(), exc)
            return _error(502, f"the model provider at {self._base.origin()} could not be reached: {exc}")

    def _refusal(self, request: web.Request) -> str | None:
        """Why this request is not the backend's call to its provider, or None."""
        if request.host != f"{HOST}:{self._port}":
            return f"host {request.host!r} is not the relay's"
        path = request.raw_path.split("?", 1)[0]
        if "%" in path or not path.startswith(self._base_path + "/"):
            return f"path {path!r} is not under the provider's base path {self._base_path or '/'}"
        tail = path[len(self._base_path) + 1 :]
        if any(segment in (".", "..", "") for segment in tail.split("/")):
            return f"path {path!r} has empty or dot segments"
        if not self._wire.serves(tail):
            served = [*self._wire.endpoints, *(f"models/<model>:{method}" for method in self._wire.methods)]
            return f"path {path!r} is none of the provider's endpoints ({', '.join(served)})"
        if not self._token_sent(request):
            return _NO_TOKEN
        return None

    def _token_sent(self, request: web.Request) -> bool:
        for name in CREDENTIAL_HEADERS:
            value = request.headers.get(name, "")
            value = value.removeprefix("Bearer ").removeprefix("bearer ")
            if value and hmac.compare_digest(value.encode(), self.token.encode()):
                return True
        return False

    def _target(self, request: web.Request) -> URL:
        query = [(name, value) for name, value in request.url.query.items() if name.lower() not in CREDENTIAL_QUERY]
        return self._base.with_path(request.path).with_query([*self._base.query.items(), *query])

    def _headers(self, request: web.Request) -> CIMultiDict[str]:
        headers = CIMultiDict(
            (name, value)
            for name, value in request.headers.items()
            if name.lower() not in CREDENTIAL_HEADERS and name.lower() not in _HOP_BY_HOP
        )
        credential = self._upstream.credential()
        if credential is not None:
            headers[credential[0]] = credential[1]
        return headers


_NO_TOKEN = "the request does not carry the relay's token"


async def _pass_through(request: web.Request, answer: aiohttp.ClientResponse) -> web.StreamResponse:
    """The provider's answer to the backend as it arrives: each chunk written the moment it is read. A provider
    that breaks off mid-answer leaves the backend's answer unfinished too (no last chunk), as it would directly."""
    headers = CIMultiDict((k, v) for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP)
    response = web.StreamResponse(status=answer.status, reason=answer.reason, headers=headers)
    await response.prepare(request)
    try:
        async for chunk in answer.content.iter_any():
            await response.write(chunk)
    except aiohttp.ClientError as exc:
        log.warning("model relay: the provider broke off its answer: %s", exc)
        if request.transport is not None:
            request.transport.abort()  # no last chunk: the backend must not take a cut answer for a whole one
        return response
    except ConnectionResetError:
        return response  # the backend hung up: the provider's answer is dropped with the connection
    await response.write_eof()
    return response


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": f"model relay: {message}", "type": "relay_error"}}, status=status)


@asynccontextmanager
async def serving(upstream: Upstream) -> AsyncIterator[ModelRelay]:
    relay = ModelRelay(upstream)
    await relay.start()
    try:
        yield relay
    finally:
        await relay.stop()
