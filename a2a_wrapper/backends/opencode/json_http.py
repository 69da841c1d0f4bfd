"""OpenCode's request/response calls (JSON in, JSON out) on HTTP/1.1 connections this module keeps open, and the
connection of its `/event` stream (read by sse_response.py).

For the short calls, above all a turn's `prompt_async`, aiohttp's client session built a request object, merged
headers, filtered cookies, started timers and took a connection from its connector for each call. A plain exchange
on a kept connection costs the agent less CPU for a wrapped trivial turn: 0.2 ms of ~6.6 by bench/cpu_ab.py (-0.10,
-0.25, -0.29 per ABBA group) and 0.2-0.6 ms in three alternating runs of 200 turns, in a fast hour of this VM; in a
slow one, a first cut of it (prompt_async alone) saved 0.7-1.3 ms of ~8. Here and in sse_response.py the project
speaks HTTP to OpenCode itself instead of through a library; what this module speaks is the part of HTTP/1.1 a
local JSON API needs:

- a request line, the connection's fixed headers, `Content-Length` and the body;
- a response with a `Content-Length`, chunked, or ended by closing the connection; `Connection: close` honoured;
- connections kept for the next call while idle for under KEEP_IDLE (OpenCode's server, on Bun, closes them after
  10 s by default), over TCP or the sandbox's Unix socket; one dropped under a call that reused it, before any of
  the answer came, is retried once on a new connection when the method may be sent twice (GET, PUT, DELETE).

Every failure to reach the server or read its answer is an OSError, an asyncio.IncompleteReadError, a
ResponseError (malformed answer) or a TimeoutError; the caller (client.py) says those in one sentence.
"""

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote, urlsplit

KEEP_IDLE = 4.0  # seconds a connection waits for its next call before it is closed here
KEPT = 8  # idle connections held at most
CONNECT_TIMEOUT = 5.0
MAX_HEAD = 64 * 1024  # bytes of status line and headers
REPEATABLE = frozenset({"GET", "PUT", "DELETE"})  # what may be sent twice: HTTP's idempotent methods
BODILESS = frozenset({204, 304})  # answers that end with their headers
Reader = TypeVar("Reader", bound=asyncio.Protocol)


class ResponseError(Exception):
    """The server's answer is not HTTP/1.1 as this module reads it."""


@dataclass(eq=False)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = field(default_factory=time.monotonic)

    def usable(self, now: float) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof() and now - self.idle_since < KEEP_IDLE

    def close(self) -> None:
        self.writer.close()


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes


class JsonHttp:
    def __init__(self, base_url: str, headers: dict[str, str], socket: Path | None = None) -> None:
        """Calls go to `base_url`'s host and port (through `socket` when given), each with `headers`."""
        self.base_url = base_url
        self.headers = dict(headers)
        url = urlsplit(base_url)
        self._host = url.hostname or "127.0.0.1"
        self._port = url.port or 80
        self._prefix = url.path.rstrip("/")
        self._socket = socket
        fixed = {"Host": url.netloc, "Accept": "*/*", **headers}
        for name, value in fixed.items():
            if any(character in value for character in "\r\n\0"):
                raise ValueError(f"the header {name} would hold a line break or NUL: {value!r}")
        self._headers = "".join(f"{name}: {value}\r\n" for name, value in fixed.items()).encode()
        self._idle: list[_Connection] = []
        self._closed = False

    async def request(self, method: str, path: str, body: bytes | None, timeout: float) -> Response:
        """The answer to one call, within `timeout` seconds."""
        head = self.head(method, path, body)
        async with asyncio.timeout(timeout):
            connection, reused = await self._connection()
            try:
                return await self._exchange(connection, head, body)
            except (OSError, asyncio.IncompleteReadError) as exc:
                if not (reused and method in REPEATABLE and _nothing_answered(exc)):
                    raise
            connection, _ = await self._connection(fresh=True)
            return await self._exchange(connection, head, body)

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    async def open(self, reader: Callable[[], Reader]) -> tuple[asyncio.Transport, Reader]:
        """A connection of its own to the server, read by the protocol `reader` makes (which sends its request)."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(CONNECT_TIMEOUT):
            if self._socket is not None:
                return await loop.create_unix_connection(reader, str(self._socket))
            return await loop.create_connection(reader, self._host, self._port)

    def head(self, method: str, path: str, body: bytes | None = None) -> bytes:
        """The request's line and headers (the connection's own, and the body's)."""
        target = quote(self._prefix + "/" + path.lstrip("/"), safe="/?=&:@%+,;~!$'()*")
        length = b"" if body is None else b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        return f"{method} {target} HTTP/1.1\r\n".encode() + self._headers + length + b"\r\n"

    async def _connection(self, fresh: bool = False) -> tuple[_Connection, bool]:
        now = time.monotonic()
        while self._idle and not fresh:
            connection = self._idle.pop()
            if connection.usable(now):
                return connection, True
            connection.close()
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_HEAD, loop=loop)  # what asyncio.open_connection builds, on `open`
        transport, protocol = await self.open(lambda: asyncio.StreamReaderProtocol(reader, loop=loop))
        return _Connection(reader, asyncio.StreamWriter(transport, protocol, reader, loop)), False

    async def _exchange(self, connection: _Connection, head: bytes, body: bytes | None) -> Response:
        kept = False
        try:
            connection.writer.write(head if body is None else head + body)
            await connection.writer.drain()
            status, headers = await _read_head(connection.reader)
            answer = b"" if status in BODILESS else await _read_body(connection.reader, headers)
            framed = status in BODILESS or "content-length" in headers or _chunked(headers)
            kept = framed and headers.get("connection", "").lower() != "close"
            return Response(status, answer)
        finally:
            self._done(connection, kept)

    def _done(self, connection: _Connection, kept: bool) -> None:
        if kept and not self._closed and len(self._idle) < KEPT:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()


def _nothing_answered(exc: BaseException) -> bool:
    """The server closed the connection before a byte of its answer: it did not take the request."""
    return isinstance(exc, ConnectionError) or (isinstance(exc, asyncio.IncompleteReadError) and not exc.partial)


async def _read_until(reader: asyncio.StreamReader, separator: bytes) -> bytes:
    """Up to and with `separator`; a ResponseError past MAX_HEAD bytes without it (a header or chunk line)."""
    try:
        return await reader.readuntil(separator)
    except asyncio.LimitOverrunError as exc:
        raise ResponseError(f"the answer holds over {MAX_HEAD} bytes without a line end where one belongs") from exc


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = await _read_until(reader, b"\r\n\r\n")
    status_line, *lines = raw[:-4].decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ResponseError(f"not an HTTP/1.1 status line: {status_line[:100]!r}")
    headers = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon:
            raise ResponseError(f"not a header line: {line[:100]!r}")
        headers[name.strip().lower()] = value.strip()
    return int(code), headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if _chunked(headers):
        return await _read_chunks(reader)
    length = headers.get("content-length")
    if length is None:
        return await reader.read()  # to the end: the server closes the connection after the body
    if not length.isdigit():
        raise ResponseError(f"not a Content-Length: {length[:40]!r}")
    return await reader.readexactly(int(length))


def _chunked(headers: dict[str, str]) -> bool:
    return headers.get("transfer-encoding", "").lower() == "chunked"


async def _read_chunks(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size_line = (await _read_until(reader, b"\r\n"))[:-2].split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise ResponseError(f"not a chunk size: {size_line[:40]!r}") from None
        if size == 0:
            while await _read_until(reader, b"\r\n") != b"\r\n":  # trailers, if any
                pass
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        if await reader.readexactly(2) != b"\r\n":
            raise ResponseError("a chunk does not end with CRLF")
