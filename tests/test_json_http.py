"""OpenCode's short calls on kept HTTP/1.1 connections (backends/opencode/json_http.py), against a real aiohttp
server on 127.0.0.1 and on a Unix socket: bodies framed each way, connections kept and not, a server that closes
idle ones, a body of 4 MiB, and a call that takes too long."""

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from a2a_wrapper.backends.opencode.json_http import MAX_HEAD, JsonHttp, ResponseError


def app() -> web.Application:
    peers: list[object] = []

    async def echo(request: web.Request) -> web.Response:
        transport = request.transport
        assert transport is not None
        peers.append(transport.get_extra_info("peername") or id(transport))
        body = await request.read()
        seen = {"method": request.method, "path": request.path_qs, "body": len(body), "peers": len(set(peers))}
        seen["directory"] = request.headers.get("x-opencode-directory")
        seen["sum"] = sum(body) % 997
        return web.json_response(seen)

    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for piece in (b'{"parts": [', b'"one", ', b'"two"]}'):
            await response.write(piece)
        await response.write_eof()
        return response

    async def empty(request: web.Request) -> web.Response:
        return web.Response(status=204)

    async def closing(request: web.Request) -> web.Response:
        return web.json_response({"closing": True}, headers={"Connection": "close"})

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({})

    application = web.Application(client_max_size=8 * 1024 * 1024)
    application.router.add_route("*", "/echo/{tail:.*}", echo)
    application.router.add_get("/chunked", chunked)
    application.router.add_delete("/empty", empty)
    application.router.add_get("/closing", closing)
    application.router.add_get("/slow", slow)
    return application


@asynccontextmanager
async def served(socket: Path | None = None, keepalive: float = 75.0) -> AsyncIterator[str]:
    runner = web.AppRunner(app(), keepalive_timeout=keepalive)
    await runner.setup()
    site: web.BaseSite
    if socket is not None:
        site = web.UnixSite(runner, str(socket))
        await site.start()
        url = "http://localhost"
    else:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}"
    try:
        yield url
    finally:
        await runner.cleanup()


def answer(body: bytes) -> dict[str, object]:
    return dict(json.loads(body))


async def test_calls_share_one_connection_and_carry_their_bodies_and_headers() -> None:
    async with served() as url:
        calls = JsonHttp(url, {"x-opencode-directory": "/work/ü"})
        try:
            first = await calls.request("POST", "/echo/session/s1/prompt_async", b'{"a": 1}', 5)
            second = await calls.request("GET", "echo/session/status", None, 5)
        finally:
            await calls.close()
    assert first.status == 200 and second.status == 200
    sent = answer(first.body)
    assert sent["method"] == "POST" and sent["path"] == "/echo/session/s1/prompt_async" and sent["body"] == 8
    assert sent["directory"] == "/work/ü"  # in UTF-8, as aiohttp's client sent it
    assert answer(second.body)["method"] == "GET" and answer(second.body)["peers"] == 1, "the second call reused it"


async def test_a_chunked_answer_and_an_empty_one_are_read_whole_and_the_connection_kept() -> None:
    async with served() as url:
        calls = JsonHttp(url, {})
        try:
            chunked = await calls.request("GET", "/chunked", None, 5)
            empty = await calls.request("DELETE", "/empty", None, 5)
            after = await calls.request("GET", "/echo/after", None, 5)
        finally:
            await calls.close()
    assert json.loads(chunked.body) == {"parts": ["one", "two"]}
    assert empty.status == 204 and empty.body == b""
    assert answer(after.body)["peers"] == 1


async def test_a_connection_the_server_closes_is_not_used_again() -> None:
    async with served(keepalive=0.2) as url:
        calls = JsonHttp(url, {})
        try:
            await calls.request("GET", "/closing", None, 5)
            closed = await calls.request("POST", "/echo/a", b"{}", 5)  # the last connection said it closes
            await asyncio.sleep(0.6)  # past the server's keep-alive: it closed this one too
            again = await calls.request("POST", "/echo/b", b"{}", 5)
        finally:
            await calls.close()
    assert closed.status == 200 and again.status == 200
    assert answer(again.body)["peers"] == 2, "each call to /echo came on a connection of its own"


async def test_four_mebibytes_arrive_whole_over_a_unix_socket(tmp_path: Path) -> None:
    body = json.dumps({"text": "x" * (4 * 1024 * 1024)}).encode()
    async with served(socket=tmp_path / "opencode.sock") as url:
        calls = JsonHttp(url, {}, tmp_path / "opencode.sock")
        try:
            sent = answer((await calls.request("POST", "/echo/big", body, 10)).body)
        finally:
            await calls.close()
    assert sent["body"] == len(body) and sent["sum"] == sum(body) % 997


async def test_a_call_past_its_timeout_raises_timeout_error() -> None:
    async with served() as url:
        calls = JsonHttp(url, {})
        try:
            with pytest.raises(TimeoutError):
                await calls.request("GET", "/slow", None, 0.3)
            assert answer((await calls.request("GET", "/echo/next", None, 5)).body)["method"] == "GET"
        finally:
            await calls.close()


async def test_nothing_listening_raises_os_error(unused_tcp_port: int) -> None:
    calls = JsonHttp(f"http://127.0.0.1:{unused_tcp_port}", {})
    with pytest.raises(OSError):
        await calls.request("GET", "/global/health", None, 3)


@asynccontextmanager
async def dropping_second_calls() -> AsyncIterator[str]:
    """A server that answers the first call on each connection, keeps it, and drops it on the second unanswered."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_a_kept_connection_dropped_under_a_call_is_retried_only_for_a_method_that_may_be_sent_twice() -> None:
    async with dropping_second_calls() as url:
        calls = JsonHttp(url, {})
        try:
            await calls.request("GET", "/a", None, 5)
            assert (await calls.request("GET", "/b", None, 5)).body == b"{}", "dropped, then sent on a new one"
            with pytest.raises((OSError, asyncio.IncompleteReadError)):
                await calls.request("POST", "/c", b"{}", 5)  # the server may have taken it: not sent again
        finally:
            await calls.close()


def test_a_header_value_with_a_line_break_is_refused_before_any_call() -> None:
    with pytest.raises(ValueError, match="x-opencode-directory"):
        JsonHttp("http://127.0.0.1:1", {"x-opencode-directory": "/work\r\nX-Injected: 1"})


async def test_a_chunk_line_past_the_limit_is_a_response_error() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"0" * (MAX_HEAD + 10) + b"\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    calls = JsonHttp(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", {})
    try:
        with pytest.raises(ResponseError, match="without a line end"):
            await calls.request("GET", "/long", None, 5)
    finally:
        await calls.close()
        server.close()
