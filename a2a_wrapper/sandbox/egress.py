"""The sandbox's only way out: an HTTP proxy on a Unix socket that decides every connection by its host.

Inside the sandbox, HTTP_PROXY / HTTPS_PROXY name a port the bridge pipes here, and loopback services the config
names (the model, MCP servers) are CONNECT-ed here by the bridge: every connection any tool makes passes this
one decision. A request is `CONNECT host:port` (HTTPS, or any TCP through a forward) or an absolute-form
`GET http://host/…` (plain HTTP). The destination is allowed when it is one of the agent's own endpoints (its
model provider, its MCP servers), else the shield's network rules decide its host. A proxy cannot pause a
connection for a person, so `ask` is a deny here (the log line and the audit say so). Each decision is audited.

No proxy library is used: the few well-kept ones (proxy.py, mitmproxy) are servers of their own with plugin
systems, TLS interception and far more surface than one decision per connection needs.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from a2a_wrapper.events import Permission
from a2a_wrapper.sandbox.bridge import splice
from a2a_wrapper.shield.decision import Decision, PermissionPolicy
from a2a_wrapper.shield.hosts import BadUrl, host_matches, normalize_host

log = logging.getLogger(__name__)

_HEAD_LIMIT = 16 * 1024
_CONNECT_TIMEOUT = 10.0
ASK_IS_DENY = "ask is a deny at the egress proxy (a connection cannot wait for a person)"


@dataclass(frozen=True, slots=True)
class Destination:
    host: str  # normalised
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class EgressDecision:
    destination: Destination
    allowed: bool
    rule: str
    reason: str
    asked: bool = False  # a rule said ask, which the proxy turned into this deny

    @property
    def outcome(self) -> str:
        """allow, deny, or ask-denied: how the metrics and the log name it."""
        return "allow" if self.allowed else "ask-denied" if self.asked else "deny"


Recorder = Callable[[EgressDecision, float], Awaitable[None]]


class EgressPolicy:
    """Endpoints of the agent's own (model provider, MCP servers) are allowed; any other host is the shield's."""

    def __init__(self, endpoints: set[Destination], rules: PermissionPolicy | None, hosts: Sequence[str] = ()) -> None:
        self._endpoints = endpoints
        self._hosts = tuple(hosts)  # runtime.hosts: let through whatever the rules say
        self._rules = rules  # the shield's network rules; None under autoApprove, which never allows a host

    def decide(self, destination: Destination) -> EgressDecision:
        if destination in self._endpoints:
            return EgressDecision(destination, True, "sandbox:endpoint", "an endpoint of the agent's config")
        if any(host_matches(pattern, destination.host) for pattern in self._hosts):
            return EgressDecision(destination, True, "runtime:hosts", "a host runtime.hosts lets through")
        if self._rules is None:
            return EgressDecision(
                destination, False, "sandbox:no-rules", "no shield network rule allows this host (none are set)"
            )
        decision = self._rules.decide(_as_request(destination))
        return _egress(destination, decision)


def _as_request(destination: Destination) -> Permission:
    scheme = "https" if destination.port != 80 else "http"
    url = f"{scheme}://{destination}/"
    raw = {"host": destination.host, "port": destination.port}
    return Permission(id="egress", kind="fetch", tool="egress", url=url, raw=raw)


def _egress(destination: Destination, decision: Decision) -> EgressDecision:
    if decision.outcome == "allow":
        return EgressDecision(destination, True, decision.rule, decision.reason)
    if decision.outcome == "ask":
        return EgressDecision(destination, False, decision.rule, ASK_IS_DENY, asked=True)
    return EgressDecision(destination, False, decision.rule, decision.reason)


def endpoint(url: str) -> Destination:
    """The host and port an http(s) URL connects to."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Destination(normalize_host(parts.hostname or ""), port)


class EgressProxy:
    """Serves the proxy on `socket_path` until stopped; `record` is called once per decision."""

    def __init__(self, socket_path: Path, policy: EgressPolicy, record: Recorder) -> None:
        self.socket_path = socket_path
        self._policy = policy
        self._record = record
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self.socket_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.socket_path.parent.chmod(0o700)  # no other user of this machine may use the agent's way out
        self.socket_path.unlink(missing_ok=True)
        self._server = await asyncio.start_unix_server(self._serve, self.socket_path)
        self.socket_path.chmod(0o600)  # the sandbox runs as the same user

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        self.socket_path.unlink(missing_ok=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except Exception:  # the boundary of one connection
            log.exception("egress: a connection failed")
        finally:
            self._connections.discard(task)
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _HEAD_LIMIT:
            await _answer(writer, 431, "Request Header Fields Too Large")
            return
        try:
            method, destination, forwarded = parse_head(head)
        except ValueError as exc:
            await _answer(writer, 400, f"Bad Request: {exc}")
            return
        started = time.monotonic()
        decision = self._policy.decide(destination)
        await self._record(decision, (time.monotonic() - started) * 1000)
        if not decision.allowed:
            log.info(
                "egress: %s %s %s by %s: %s", method, destination, decision.outcome, decision.rule, decision.reason
            )
            await _answer(writer, 403, f"Forbidden by the sandbox: {decision.reason}")
            return
        # the agent's own endpoints (its model) are reached on every turn: chatter; a host a rule let through is news
        level = logging.DEBUG if decision.rule == "sandbox:endpoint" else logging.INFO
        log.log(level, "egress: %s %s allowed by %s", method, destination, decision.rule)
        try:
            async with asyncio.timeout(_CONNECT_TIMEOUT):
                upstream = await asyncio.open_connection(destination.host, destination.port)
        except (OSError, TimeoutError) as exc:
            await _answer(writer, 502, f"Bad Gateway: {destination} cannot be reached ({exc or 'timeout'})")
            return
        if forwarded is None:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream[1].write(forwarded)
        await splice((reader, writer), upstream)


def parse_head(head: bytes) -> tuple[str, Destination, bytes | None]:
    """(method, destination, the head to send upstream: None for CONNECT). Raises ValueError with the reason."""
    line, _, rest = head.partition(b"\r\n")
    try:
        method, target, version = line.decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise ValueError("the request line is not `METHOD TARGET HTTP/1.x`") from None
    if not version.startswith("HTTP/1."):
        raise ValueError(f"unsupported version {version!r}")
    try:
        if method == "CONNECT":
            return method, _authority(target), None
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.netloc:
            raise ValueError("a proxied request names an absolute http:// URL (https goes through CONNECT)")
        origin = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return (
            method,
            _authority(parts.netloc.rpartition("@")[2], 80),
            f"{method} {origin} {version}\r\n".encode() + rest,
        )
    except BadUrl as exc:
        raise ValueError(f"the host {exc}") from None


def _authority(text: str, default_port: int | None = None) -> Destination:
    host, port = _split_port(text)
    if port is None:
        if default_port is None:
            raise ValueError(f"CONNECT {text!r} names no port")
        port = default_port
    if not 0 < port < 65536:
        raise ValueError(f"invalid port in {text!r}")
    return Destination(normalize_host(host), port)


def _split_port(text: str) -> tuple[str, int | None]:
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    if port and not port.isdigit():
        raise ValueError(f"invalid port in {text!r}")
    return host, int(port) if port else None


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = (text + "\n").encode()
    head = f"HTTP/1.1 {status} {text.split(':')[0]}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    writer.write(head.encode() + b"Connection: close\r\n\r\n" + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
