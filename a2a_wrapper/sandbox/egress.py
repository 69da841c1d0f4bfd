"""The sandbox's only way out: an HTTP proxy on a Unix socket that decides every connection by its host and then
by every address the host resolves to.

Inside the sandbox, HTTP_PROXY / HTTPS_PROXY name a port the bridge pipes here, and loopback services the config
names (the model, MCP servers) are CONNECT-ed here by the bridge: every connection any tool makes passes this
one decision. A request is `CONNECT host:port` (HTTPS, or any TCP through a forward) or an absolute-form
`GET http://host/…` (plain HTTP). The destination is allowed when it is one of the agent's own endpoints (its
model provider, its MCP servers), else the shield's network rules decide its host. A proxy cannot pause a
connection for a person, so `ask` is a deny here (the log line and the audit say so). Each decision is audited.

Rules allow NAMES, never a way into the wrapper's own network. A host the rules let through is resolved here,
once (a name the rules refuse is never even looked up), and every address it resolves to is judged
(addresses.py): a loopback, private, link-local, CGNAT, multicast, unspecified or reserved address, or one of
this machine's own, is refused, whatever a rule or `runtime.hosts` says, unless the connection is exactly an
endpoint the config names (host and port as written there). The one way an operator opens such addresses is a
network in CIDR form in `runtime.hosts`, which opens exactly that network (never loopback, never this machine's
own addresses). The connection then goes to the address just judged, so a second DNS answer reaches nothing.

The socket is bounded: at most `max_connections` at once (past that, a 503 at once, counted, the first of a
burst logged), and a request head must be complete within `head_timeout` seconds (408 after).

No proxy library is used: the few well-kept ones (proxy.py, mitmproxy) are servers of their own with plugin
systems, TLS interception and far more surface than one decision per connection needs.
"""

import asyncio
import contextlib
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from a2a_wrapper.addresses import Address, UnresolvableHost, non_public, own, parse_network, plain, resolve
from a2a_wrapper.events import Permission
from a2a_wrapper.sandbox.bridge import splice
from a2a_wrapper.shield.decision import Decision, PermissionPolicy
from a2a_wrapper.shield.hosts import BadUrl, host_matches, normalize_host
from a2a_wrapper.state.audit import UNAUDITED, AuditUnavailable

log = logging.getLogger(__name__)

_HEAD_LIMIT = 16 * 1024
_CONNECT_TIMEOUT = 10.0  # resolving the host and connecting to one of its addresses
MAX_CONNECTIONS = 128  # per sandbox: two descriptors each once connected, far below a process's 1,024
HEAD_TIMEOUT = 5.0  # seconds to a complete request head: a client that sends nothing or half a head is closed
ASK_IS_DENY = "ask is a deny at the egress proxy (a connection cannot wait for a person)"
ENDPOINT_RULE = "sandbox:endpoint"
ADDRESS_RULE = "sandbox:address"


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
    address: Address | None = None  # the address refused, when the host's name was allowed but not where it led

    @property
    def outcome(self) -> str:
        """allow, deny, or ask-denied: how the metrics and the log name it."""
        return "allow" if self.allowed else "ask-denied" if self.asked else "deny"

    @property
    def target(self) -> str:
        """What the audit names: the destination, and the address refused when it is not the host itself."""
        if self.address is None or str(self.address) == self.destination.host:
            return str(self.destination)
        return f"{self.destination} ({self.address})"


Recorder = Callable[[EgressDecision, float], Awaitable[None]]


class EgressPolicy:
    """Endpoints of the agent's own (model provider, MCP servers) are allowed; any other host is the shield's,
    and then every address it resolves to must be public or in a network `runtime.hosts` opens."""

    def __init__(self, endpoints: set[Destination], rules: PermissionPolicy | None, hosts: Sequence[str] = ()) -> None:
        self._endpoints = endpoints
        networks = {entry: parse_network(entry) for entry in hosts}  # runtime.hosts, as config/runtimes.py checked
        self._hosts = tuple(entry for entry, network in networks.items() if network is None)
        self._networks = tuple(network for network in networks.values() if network is not None)
        self._rules = rules  # the shield's network rules; None under autoApprove, which never allows a host

    def decide(self, destination: Destination) -> EgressDecision:
        """The decision on the destination's host name and port, before any address is known."""
        if destination in self._endpoints:
            return EgressDecision(destination, True, ENDPOINT_RULE, "an endpoint of the agent's config")
        if any(host_matches(pattern, destination.host) for pattern in self._hosts) or self._opened(destination.host):
            return EgressDecision(destination, True, "runtime:hosts", "a host runtime.hosts lets through")
        if self._rules is None:
            return EgressDecision(
                destination, False, "sandbox:no-rules", "no shield network rule allows this host (none are set)"
            )
        decision = self._rules.decide(_as_request(destination))
        return _egress(destination, decision)

    def judge(self, decision: EgressDecision, addresses: Sequence[Address]) -> EgressDecision:
        """`decision` (an allow by name) kept when every address the host resolved to may be reached, else a
        deny naming the first address that may not and why."""
        if decision.destination in self._endpoints:
            return decision  # exactly as the config names it: the model on 127.0.0.1:PORT, a loopback MCP server
        host = decision.destination.host
        for address in addresses:
            why = self._refusal(address)
            if why:
                subject = f"{address} is" if str(address) == host else f"{host} resolves to {address},"
                reason = (
                    f"{subject} {why}; the sandbox reaches such addresses only at the endpoints the config names "
                    "(a host rule or runtime.hosts allows names, never a way into the wrapper's own network)"
                )
                return replace(decision, allowed=False, rule=ADDRESS_RULE, reason=reason, address=address)
        return decision

    def _refusal(self, address: Address) -> str:
        kind = non_public(address)
        if kind and not any(address in network for network in self._networks):
            return kind
        return "an address of this machine" if own(address) else ""

    def _opened(self, host: str) -> bool:
        """The host is an IP address in a network runtime.hosts opens."""
        try:
            address = plain(ipaddress.ip_address(host))
        except ValueError:
            return False
        return any(address in network for network in self._networks)


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
    """Serves the proxy on `socket_path` until stopped; `record` is called once per decision, `busy` once per
    connection refused because `max_connections` are open."""

    def __init__(
        self,
        socket_path: Path,
        policy: EgressPolicy,
        record: Recorder,
        *,
        busy: Callable[[], None] | None = None,
        max_connections: int = MAX_CONNECTIONS,
        head_timeout: float = HEAD_TIMEOUT,
    ) -> None:
        self.socket_path = socket_path
        self._policy = policy
        self._record = record
        self._busy = busy
        self._max_connections = max_connections
        self._head_timeout = head_timeout
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._refused = 0  # connections refused at the cap since the proxy was last below it

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
        if len(self._connections) >= self._max_connections:
            self._refuse_busy(writer)
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:  # the boundary of one connection
            log.exception("egress: a connection failed")
        finally:
            self._connections.discard(task)
            writer.close()
            if self._refused:
                log.warning("egress: below the cap again; %d connections were refused meanwhile", self._refused)
                self._refused = 0

    def _refuse_busy(self, writer: asyncio.StreamWriter) -> None:
        """A 503 line at once, without reading: the descriptor is closed as soon as the kernel has the line."""
        if not self._refused:
            log.warning("egress: %d connections open, the cap: refusing more until some close", self._max_connections)
        self._refused += 1
        if self._busy is not None:
            self._busy()
        text = f"Service Unavailable: the sandbox's egress proxy has its {self._max_connections} connections open"
        writer.write(_response(503, text))
        writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await self._head(reader, writer)
        if head is None:
            return
        try:
            method, destination, forwarded = parse_head(head)
        except ValueError as exc:
            await _answer(writer, 400, f"Bad Request: {exc}")
            return
        started = time.monotonic()
        decision, addresses, unresolved = await self._decide(destination)
        decision = await self._audited(decision, (time.monotonic() - started) * 1000)
        if not decision.allowed:
            log.info(
                "egress: %s %s %s by %s: %s", method, destination, decision.outcome, decision.rule, decision.reason
            )
            await _answer(writer, 403, f"Forbidden by the sandbox: {decision.reason}")
            return
        if not addresses:
            await _answer(writer, 502, f"Bad Gateway: {destination.host} {unresolved}")
            return
        # the agent's own endpoints (its model) are reached on every turn: chatter; a host a rule let through is news
        level = logging.DEBUG if decision.rule == ENDPOINT_RULE else logging.INFO
        log.log(level, "egress: %s %s allowed by %s", method, destination, decision.rule)
        try:
            upstream = await _open(addresses, destination.port)
        except (OSError, TimeoutError) as exc:
            await _answer(writer, 502, f"Bad Gateway: {destination} cannot be reached ({exc or 'timeout'})")
            return
        if forwarded is None:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream[1].write(forwarded)
        await splice((reader, writer), upstream)

    async def _audited(self, decision: EgressDecision, wait_ms: float) -> EgressDecision:
        """The decision, once its audit entry is written. Without the entry (a full disk: state/audit.py says so
        once) a deny stays a deny and the agent's own endpoints (its model, as its config names them) stay allowed,
        or no turn could run; any other allow is refused (fail closed): what a rule lets out of the sandbox is what
        the audit must show."""
        try:
            await self._record(decision, wait_ms)
        except AuditUnavailable as exc:
            if decision.allowed and decision.rule != ENDPOINT_RULE:
                reason = f"{exc}; a host a rule allows is refused until it can be"
                return replace(decision, allowed=False, rule=UNAUDITED, reason=reason)
        return decision

    async def _head(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes | None:
        """The request head, whole, within the deadline and the size limit; else None, the client answered why."""
        try:
            async with asyncio.timeout(self._head_timeout):
                head = await reader.readuntil(b"\r\n\r\n")
        except TimeoutError:
            log.debug("egress: no complete request head within %g s; closed", self._head_timeout)
            await _answer(writer, 408, f"Request Timeout: no complete request head within {self._head_timeout:g} s")
            return None
        except asyncio.LimitOverrunError:  # past the reader's own limit, which is larger
            head = b""
        if not head or len(head) > _HEAD_LIMIT:
            await _answer(writer, 431, "Request Header Fields Too Large")
            return None
        return head

    async def _decide(self, destination: Destination) -> tuple[EgressDecision, list[Address], str]:
        """The decision by name, then (only for a name allowed: a refused one is not even looked up) by every
        address it resolves to; with the addresses to connect to, or why there are none."""
        decision = self._policy.decide(destination)
        if not decision.allowed:
            return decision, [], ""
        try:
            async with asyncio.timeout(_CONNECT_TIMEOUT):
                addresses = await resolve(destination.host, destination.port)
        except UnresolvableHost as exc:
            return decision, [], str(exc)
        except TimeoutError:
            return decision, [], f"cannot be resolved (no answer within {_CONNECT_TIMEOUT:g} s)"
        decision = self._policy.judge(decision, addresses)
        return decision, addresses if decision.allowed else [], ""


async def _open(addresses: Sequence[Address], port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the first of the checked `addresses` that accepts one: never to the name again."""
    error: OSError = OSError("no address")
    async with asyncio.timeout(_CONNECT_TIMEOUT):
        for address in addresses:
            try:
                return await asyncio.open_connection(str(address), port)
            except OSError as exc:
                error = exc
    raise error


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
    writer.write(_response(status, text))
    with contextlib.suppress(ConnectionError):
        await writer.drain()


def _response(status: int, text: str) -> bytes:
    """A whole answer whose status line is `text` up to its first colon and whose body is `text`."""
    body = (text + "\n").encode()
    head = f"HTTP/1.1 {status} {text.split(':')[0]}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + body
