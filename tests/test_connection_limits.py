"""Connections that cannot hold the server: raw sockets against uvicorn served as the agent is (its own config).

Silent, trickling and idle connections are closed at their deadline; connections past the cap get 503; a long
response stream is never cut by any of these. The fast ones serve a two-line app; the slow ones a real agent.
"""

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.settings import ServerSettings
from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import SettingsFactory, serving
from tests.helpers.a2a_wire import answer_text, send, stream, user_message
from tests.helpers.served_app import served_app

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]

GET = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n"


async def ok(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers every request at once, never reading its body."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@asynccontextmanager
async def server(**limits: Any) -> AsyncIterator[ServerSettings]:
    settings = ServerSettings(port=free_port(), **limits)
    async with served_app(ok, settings):
        yield settings


@asynccontextmanager
async def connected(settings: ServerSettings) -> AsyncIterator[Connection]:
    reader, writer = await asyncio.open_connection(settings.host, settings.port)
    try:
        yield reader, writer
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except ConnectionError:
            pass  # the server closed it first


async def until_closed(reader: asyncio.StreamReader) -> tuple[bytes, float]:
    """What the server sent before it closed the connection, and how many seconds that took."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        received = await reader.read()
    except ConnectionResetError:
        received = b""
    return received, loop.time() - start


async def trickle(writer: asyncio.StreamWriter, data: bytes, pause: float = 0.2) -> None:
    """`data` one byte every `pause` seconds, until the server stops listening."""
    try:
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(pause)
    except ConnectionError:
        return


async def trickled(connection: Connection, data: bytes) -> tuple[bytes, float]:
    """`until_closed` while `data` is trickled to the server."""
    reader, writer = connection
    trickling = asyncio.create_task(trickle(writer, data))
    try:
        return await until_closed(reader)
    finally:
        trickling.cancel()
        await asyncio.gather(trickling, return_exceptions=True)


async def exchange(connection: Connection, request: bytes) -> tuple[bytes, bytes]:
    """One request sent and its response read (head, body), the connection left open."""
    reader, writer = connection
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    return head, await reader.readexactly(length)


async def test_a_connection_that_sends_nothing_is_closed_at_the_header_deadline() -> None:
    async with asyncio.timeout(10), server(header_timeout=0.6) as settings, connected(settings) as (reader, _):
        received, seconds = await until_closed(reader)
    assert received == b""
    assert 0.5 <= seconds < 3


async def test_headers_trickled_a_byte_at_a_time_are_cut_at_the_deadline() -> None:
    headers = b"GET / HTTP/1.1\r\nHost: test\r\nX-Slow: " + b"a" * 100
    async with asyncio.timeout(10), server(header_timeout=1) as settings, connected(settings) as connection:
        received, seconds = await trickled(connection, headers)
    assert received == b""
    assert 0.9 <= seconds < 3  # 1 byte per 0.2 s: about 5 of its 130 bytes arrived


async def test_an_idle_kept_alive_connection_is_closed_after_the_idle_timeout() -> None:
    async with asyncio.timeout(10), server(idle_timeout=0.6) as settings, connected(settings) as connection:
        head, body = await exchange(connection, GET)
        received, seconds = await until_closed(connection[0])
    assert head.startswith(b"HTTP/1.1 200") and body == b"ok"
    assert received == b""
    assert 0.5 <= seconds < 3


async def test_a_later_request_trickled_on_a_kept_alive_connection_is_cut_at_the_header_deadline() -> None:
    # its first byte stops the idle timer (uvicorn's own); the header deadline starts there
    limits = {"idle_timeout": 0.3, "header_timeout": 1.2}
    async with asyncio.timeout(10), server(**limits) as settings, connected(settings) as connection:
        await exchange(connection, GET)
        received, seconds = await trickled(connection, GET + GET)
    assert received == b""
    assert 1.1 <= seconds < 3.5


async def test_a_body_nobody_reads_must_still_arrive_by_the_body_deadline() -> None:
    request = b"POST /health HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n"
    async with asyncio.timeout(10), server(body_timeout=1) as settings, connected(settings) as connection:
        head, body = await exchange(connection, request)  # answered before the body has come
        received, seconds = await trickled(connection, b"x" * 1000)
    assert head.startswith(b"HTTP/1.1 200") and body == b"ok"
    assert received == b""
    assert 0.9 <= seconds < 3


async def test_connections_past_the_cap_get_503_until_one_closes() -> None:
    close = b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    over = b"POST /a2a/rest/message:send HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\n{}"
    async with asyncio.timeout(10), server(max_connections=3) as settings:
        held = [await asyncio.open_connection(settings.host, settings.port) for _ in range(3)]
        try:
            for connection in held:
                head, _ = await exchange(connection, GET)  # each served, and kept open
                assert head.startswith(b"HTTP/1.1 200")
            async with connected(settings) as (reader, writer):
                writer.write(over)
                refused, _ = await until_closed(reader)
            for connection in held:
                head, _ = await exchange(connection, close)
                assert b"connection: close" in head.lower()
                await until_closed(connection[0])  # the server has let it go
        finally:
            for _, writer in held:
                writer.close()
        async with connected(settings) as connection:
            head, body = await exchange(connection, GET)
    status, _, rest = refused.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in status.lower()
    error = json.loads(rest)["error"]
    assert error["code"] == 503 and error["status"] == "UNAVAILABLE"
    assert [(detail["reason"], detail["domain"]) for detail in error["details"]] == [("UNAVAILABLE", "a2a-wrapper")]
    assert "limit of 3 open connections" in error["message"]
    assert head.startswith(b"HTTP/1.1 200") and body == b"ok"


async def refusing(scope: Scope, receive: Receive, send: Send) -> None:
    """Refuses every request at once and closes, never reading its body."""
    headers = [(b"content-length", b"7"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": b"refused"})


async def flood(writer: asyncio.StreamWriter) -> None:
    """Body bytes as fast as the connection takes them, until the server stops listening."""
    chunk = b"x" * 65536
    try:
        while True:
            writer.write(chunk)
            await writer.drain()
    except ConnectionError:
        return


async def test_a_refusal_sent_while_the_client_still_sends_its_body_arrives_whole() -> None:
    head = b"POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 1000000000\r\n\r\n"
    settings = ServerSettings(port=free_port())
    async with asyncio.timeout(10), served_app(refusing, settings), connected(settings) as (reader, writer):
        writer.write(head)
        flooding = asyncio.create_task(flood(writer))
        await asyncio.sleep(0.2)  # the refusal is sent, the server closed, and the client still sends
        try:
            received, _ = await until_closed(reader)
        finally:
            flooding.cancel()
            await asyncio.gather(flooding, return_exceptions=True)
    assert received.startswith(b"HTTP/1.1 413") and received.endswith(b"\r\n\r\nrefused")  # not lost to a reset


@pytest.mark.slow
async def test_a_body_trickled_past_its_deadline_gets_408_and_never_reaches_the_agent(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    prompt = "trickled-prompt-never-read"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message(prompt)}})
    head = "POST /a2a/jsonrpc HTTP/1.1\r\nHost: test\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    settings = make_settings(server={"body_timeout": 1})
    async with serving(settings, offline_model) as served, asyncio.timeout(60):
        async with connected(settings.server) as connection:
            connection[1].write(head.encode())
            answer, seconds = await trickled(connection, body.encode())
        after = await send(http, served.jsonrpc, "right after")
        requests = (await http.get(offline_model.url + "/control/requests")).json()
    status, _, rest = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 408") and b"connection: close" in status.lower()
    error = json.loads(rest)["error"]
    assert error["code"] == -32600 and [detail["reason"] for detail in error["data"]] == ["DEADLINE_EXCEEDED"]
    assert "not received whole within 1 seconds" in error["message"]
    assert 0.9 <= seconds < 4
    assert not any(prompt in str(request) for request in requests)
    assert after["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.slow
async def test_a_stream_outlasting_every_deadline_arrives_whole(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    limits = {"header_timeout": 0.5, "body_timeout": 0.5, "idle_timeout": 0.5}
    async with serving(make_settings(server=limits), offline_model) as served, asyncio.timeout(60):
        loop = asyncio.get_running_loop()
        start = loop.time()
        events = await stream(http, served.jsonrpc, {"message": user_message("[[long:4]] [[slow:4]]")})
        seconds = loop.time() - start
    assert seconds > 3  # about a second between words: longer than each deadline
    assert answer_text(events) == "word1 word2 word3 word4"
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_headers_past_16_kib_are_refused_with_400() -> None:
    unended = b"GET / HTTP/1.1\r\nHost: test\r\nX-Big: " + b"a" * 17 * 1024  # still going: no line end yet
    async with asyncio.timeout(10), server() as settings, connected(settings) as (reader, writer):
        writer.write(unended)
        received, _ = await until_closed(reader)
    assert received.startswith(b"HTTP/1.1 400")


async def test_headers_sent_in_pieces_past_16_kib_are_refused_with_400() -> None:
    async with asyncio.timeout(10), server() as settings, connected(settings) as (reader, writer):
        writer.write(b"GET / HTTP/1.1\r\nHost: test\r\n")
        for _ in range(17):  # just past 16 KiB, each header whole, the head never ending
            writer.write(b"X-Part: " + b"a" * 1000 + b"\r\n")
            await writer.drain()
            await asyncio.sleep(0.01)
        received, seconds = await until_closed(reader)
    assert received.startswith(b"HTTP/1.1 400")
    assert seconds < 1  # at the bound, not at the header deadline


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers every request with its method, path and body."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    content = f"{scope['method']} {scope['path']} ".encode() + body
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(content))]})
    await send({"type": "http.response.body", "body": content})


UPGRADE = b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"


@pytest.mark.parametrize(
    ("framing", "body"),
    [
        (b"Content-Length: 23\r\n", b'{"jsonrpc": "2.0", "a"}'),
        (b"Transfer-Encoding: chunked\r\n", b'5\r\n{"jso\r\n12\r\nnrpc": "2.0", "a"}\r\n0\r\n\r\n'),
    ],
    ids=["content-length", "chunked"],
)
async def test_a_request_asking_to_upgrade_is_served_as_http_11_with_its_body(framing: bytes, body: bytes) -> None:
    """`curl --http2` on http:// asks for h2c: the server answers in HTTP/1.1 (RFC 9110 §7.8), the body intact,
    and the connection carries the next request."""
    settings = ServerSettings(port=free_port())
    head = b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: test\r\n" + UPGRADE + framing + b"\r\n"
    async with asyncio.timeout(10), served_app(echo, settings), connected(settings) as connection:
        writer = connection[1]
        writer.write(head + body[:9])  # the body split across reads
        await writer.drain()
        await asyncio.sleep(0.05)
        answered, answer = await exchange(connection, body[9:])
        _, following = await exchange(connection, b"POST /next HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\nok")
    assert answered.startswith(b"HTTP/1.1 200 ")
    assert answer == b'POST /a2a/jsonrpc {"jsonrpc": "2.0", "a"}'
    assert following == b"POST /next ok"
