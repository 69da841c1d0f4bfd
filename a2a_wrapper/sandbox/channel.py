"""Authenticated TCP channels between a wrapper's pod and its backend's pod (the backend in a pod of its own).

A pod's containers share one network, so a backend beside the wrapper reaches whatever the pod can. Apart, the
backend's pod reaches only what its NetworkPolicy lets it: the wrapper's channel port. What crosses between the
two pods today as a Unix socket in a shared folder (the egress proxy, the tool hook, the sidecar's link, a port the
backend serves) crosses as a TCP connection through a channel instead:

- a `Gate` listens on TCP and, for each connection, reads one head line `a2a-channel NAME TOKEN`, checks the token
  (constant time) and that NAME is one it serves, answers `ok`, then pipes the connection to what NAME opens (a
  Unix socket of its own side, a port on its own loopback). Anything else — no head within HEAD_TIMEOUT, a head
  past HEAD_LIMIT, another token, an unknown name — is answered `refused: SENTENCE` and closed, and the refusal
  is reported (peer, name, why; never the token given);
- a `Forward` listens on a Unix socket of its own side (in a folder the backend's container mounts read-only,
  or in the wrapper's own sockets folder) and sends each connection through the other side's gate under one name.

The token is a Kubernetes Secret's, mounted as a file in the wrapper's container and the backend pod's `channel`
container only: the container the backend's tools run in never holds it, so a tool's direct dial of a gate is
refused, and the names a gate serves are all it can reach.
"""

import asyncio
import contextlib
import hmac
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from a2a_wrapper.sandbox.bridge import splice

log = logging.getLogger(__name__)

MAGIC = b"a2a-channel"
HEAD_LIMIT = 512  # bytes: a name and a token
HEAD_TIMEOUT = 5.0  # seconds for a peer to say which channel and prove it may
MAX_CONNECTIONS = 256  # open at once through one gate: past it a connection is closed at once (the wrapper's fds)
REPORT_EVERY = 1.0  # seconds: refusals reported (logged, audited) at most this often; the rest counted in the next
MIN_TOKEN = 32  # characters: a token shorter than this is refused at start (fail closed)
Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Opener = Callable[[], Awaitable[Streams]]


@dataclass(frozen=True)
class Refusal:
    peer: str
    name: str  # as the peer gave it ("" if it gave none)
    reason: str
    unreported: int = 0  # refusals since the last one reported (a flood is one report a second, not one each)


class ChannelRefused(ConnectionError):
    """The other side's gate refused this channel: its sentence."""


def read_token(path: Path) -> bytes:
    """The channel's token from its Secret's file; a missing, unreadable or short one stops the start."""
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise ValueError(f"the channel's token file {path} cannot be read: {exc.strerror or exc}") from exc
    if len(token) < MIN_TOKEN or any(character.isspace() for character in token):
        raise ValueError(
            f"the channel's token in {path} is {len(token)} characters or holds spaces: it must be one word of at "
            f"least {MIN_TOKEN} (e.g. `openssl rand -hex 32`)"
        )
    return token.encode()


def unix_opener(path: Path) -> Opener:
    async def open_unix() -> Streams:
        return await asyncio.open_unix_connection(str(path))

    return open_unix


def loopback_opener(port: int) -> Opener:
    async def open_loopback() -> Streams:
        return await asyncio.open_connection("127.0.0.1", port)

    return open_loopback


class Gate:
    """The TCP end of the channels into one side: `resolve(name)` is what a name opens there, or None."""

    def __init__(
        self,
        host: str,
        port: int,
        token: bytes,
        resolve: Callable[[str], Opener | None],
        refused: Callable[[Refusal], None] = lambda refusal: None,
    ) -> None:
        if len(token) < MIN_TOKEN:
            raise ValueError(f"a channel token of {len(token)} bytes: at least {MIN_TOKEN}")
        self._host, self._port, self._token = host, port, token
        self._resolve = resolve
        self._refused = refused
        self._server: asyncio.Server | None = None
        self._piping: set[asyncio.Task[None]] = set()
        self._reported_at = -REPORT_EVERY
        self._unreported = 0

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accepted, self._host, self._port)
        log.info("channel gate: listening on %s:%d", self._host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._piping):
            task.cancel()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._piping) >= MAX_CONNECTIONS:
            self._report(Refusal(_peer(writer), "", f"{MAX_CONNECTIONS} connections open"))
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._piping.add(task)
        try:
            await self._serve(reader, writer)
        finally:
            self._piping.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = _peer(writer)
        name, opener, reason = "", None, ""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\n"), HEAD_TIMEOUT)
            if len(head) > HEAD_LIMIT:
                raise ValueError(head)
            name, opener, reason = self._judge(head)
        except TimeoutError:
            reason = f"no head within {HEAD_TIMEOUT:.0f} s"
        except (asyncio.LimitOverrunError, ValueError):
            reason = f"a head longer than {HEAD_LIMIT} bytes"
        except (asyncio.IncompleteReadError, ConnectionError):
            reason = "closed before a whole head"
        if opener is None:
            await self._refuse(writer, Refusal(peer, name, reason))
            return
        try:
            upstream = await opener()
        except OSError as exc:
            await self._refuse(writer, Refusal(peer, name, f"{name} is not reachable here: {exc.strerror or exc}"))
            return
        writer.write(b"ok\n")
        log.debug("channel gate: %s opened %s", peer, name)
        await splice((reader, writer), upstream)

    def _judge(self, head: bytes) -> tuple[str, Opener | None, str]:
        """The name a head asks for, what it opens, or why it is refused."""
        words = head.strip().split(b" ")
        if len(words) != 3 or words[0] != MAGIC:
            return "", None, "not a channel's head (`a2a-channel NAME TOKEN`)"
        name = words[1].decode(errors="replace")
        if not hmac.compare_digest(words[2], self._token):
            return name, None, "a wrong token"
        opener = self._resolve(name)
        if opener is None:
            return name, None, f"no channel named {name!r} here"
        return name, opener, ""

    async def _refuse(self, writer: asyncio.StreamWriter, refusal: Refusal) -> None:
        self._report(refusal)
        with contextlib.suppress(ConnectionError):
            writer.write(f"refused: {refusal.reason}\n".encode())
            await writer.drain()
        writer.close()

    def _report(self, refusal: Refusal) -> None:
        now = asyncio.get_running_loop().time()
        if now - self._reported_at < REPORT_EVERY:
            self._unreported += 1
            return
        refusal = Refusal(refusal.peer, refusal.name, refusal.reason, self._unreported)
        self._reported_at, self._unreported = now, 0
        more = f" (and {refusal.unreported} more since the last)" if refusal.unreported else ""
        log.warning(
            "channel gate: refused %s (%s): %s%s", refusal.peer, refusal.name or "no name", refusal.reason, more
        )
        self._refused(refusal)


async def open_channel(host: str, port: int, name: str, token: bytes) -> Streams:
    """A connection through the gate at host:port to what `name` opens there (ChannelRefused with its sentence)."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(MAGIC + b" " + name.encode() + b" " + token + b"\n")
    try:
        answer = await asyncio.wait_for(reader.readuntil(b"\n"), HEAD_TIMEOUT)
    except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError) as exc:
        writer.close()
        raise ChannelRefused(f"the gate at {host}:{port} gave no answer for {name}: {exc!r}") from exc
    if answer != b"ok\n":
        writer.close()
        raise ChannelRefused(f"the gate at {host}:{port} refused {name}: {answer.decode(errors='replace').strip()}")
    return reader, writer


class Forward:
    """A Unix socket at `path` whose every connection goes through the gate at host:port to `name`."""

    def __init__(self, path: Path, host: str, port: int, name: str, token: bytes) -> None:
        self._path, self._host, self._port, self._name, self._token = path, host, port, name, token
        self._server: asyncio.Server | None = None

    async def start(self, mode: int = 0o666) -> None:
        self._path.unlink(missing_ok=True)
        self._server = await asyncio.start_unix_server(self._accepted, str(self._path))
        self._path.chmod(mode)  # connectable whichever user the backend runs as

    async def serve_on(self, listening: socket.socket) -> None:
        """Forward the connections of a socket already listening at the path."""
        self._server = await asyncio.start_unix_server(self._accepted, sock=listening)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await open_channel(self._host, self._port, self._name, self._token)
        except OSError as exc:  # ChannelRefused too
            log.warning("channel %s: %s", self._name, exc)
            writer.close()
            return
        await splice((reader, writer), upstream)


def _peer(writer: asyncio.StreamWriter) -> str:
    address = writer.get_extra_info("peername")
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
