"""a2a-sdk's SSE responses as the agent serves them (frontend/compat/event_stream_response.py), on a real uvicorn with
the agent's own configuration, read by a raw client: the bytes on the wire, the pings, a client that goes away.

Each stream is built by a2a-sdk's own `create_event_source_response`, as its JSON-RPC and REST routes build theirs;
the last test drops a real agent's stream mid-turn.
"""

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.server.routes.common import create_event_source_response
from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.settings import ServerSettings
from a2a_wrapper.frontend.compat.event_stream_response import EventStream, use_event_streams
from tests.conftest import ServedAgent
from tests.helpers.a2a_wire import V1, final_state, rpc, subscription, task_answer, user_message
from tests.helpers.served_app import served_app

SLOW = "[[long:3]] [[slow:1.5]]"  # three words over 1.5 s
EVENTS: list[Any] = [
    {"data": '{"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t"}}}'},
    {"event": "error", "data": '{"error": {"code": -32001}}'},
    ServerSentEvent(data="two\nlines", id="7"),
    "plain text",
]


class Events:
    """An event generator that records how far it got and whether its cleanup ran."""

    def __init__(self, items: list[Any], pause: float = 0.0, then_wait: bool = False) -> None:
        self.items = items
        self.pause = pause
        self.then_wait = then_wait
        self.started = False
        self.cleaned_up = asyncio.Event()

    async def __call__(self) -> AsyncIterator[Any]:
        self.started = True
        try:
            for item in self.items:
                await asyncio.sleep(self.pause)
                yield item
            if self.then_wait:
                await asyncio.Event().wait()  # a task waiting for a person: nothing more for hours
        finally:
            self.cleaned_up.set()


@asynccontextmanager
async def streaming(respond: Callable[[], Response]) -> AsyncIterator[ServerSettings]:
    async def endpoint(request: Request) -> Response:
        return respond()

    settings = ServerSettings(port=free_port())
    app = Starlette(routes=[Route("/stream", endpoint, methods=["GET", "HEAD"])])
    async with served_app(app, settings):
        yield settings


async def fetched(settings: ServerSettings, method: str = "GET") -> tuple[bytes, bytes]:
    """The whole response to one request on a connection of its own: its head and its body, chunked as sent."""
    reader, writer = await asyncio.open_connection(settings.host, settings.port)
    try:
        writer.write(f"{method} /stream HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".encode())
        async with asyncio.timeout(10):
            received = await reader.read()
    finally:
        writer.close()
    head, _, body = received.partition(b"\r\n\r\n")
    return head, body


def unchunked(body: bytes) -> tuple[bytes, bool]:
    """The chunked body's content, and whether it ended with the last (empty) chunk."""
    content = b""
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return content, body == b"\r\n"
        content, body = content + body[:size], body[size + 2 :]
    return content, False


def headers(head: bytes) -> dict[str, str]:
    lines = head.decode().split("\r\n")[1:]
    return {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}


@pytest.fixture(autouse=True)
def installed() -> None:
    use_event_streams()


async def test_the_sdk_streams_with_the_same_bytes_and_headers_as_sse_starlette_and_ends_cleanly() -> None:
    assert isinstance(create_event_source_response(Events([])()), EventStream)
    events = Events(EVENTS)
    async with streaming(lambda: create_event_source_response(events())) as settings:
        head, body = await fetched(settings)
    async with streaming(lambda: EventSourceResponse(Events(EVENTS)())) as settings:
        their_head, their_body = await fetched(settings)

    content, ended = unchunked(body)
    assert ended, "the stream ends with the last chunk, not a dropped connection"
    assert content == unchunked(their_body)[0]
    assert content.startswith(b'data: {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t"}}}\r\n\r\n')
    assert b"event: error\r\ndata: " in content and b"id: 7\r\ndata: two\r\ndata: lines\r\n\r\n" in content
    ours, theirs = headers(head), headers(their_head)
    assert ours.pop("date", None) and theirs.pop("date", None)
    assert ours == theirs
    assert ours["content-type"].startswith("text/event-stream")
    assert ours["cache-control"] == "no-store" and ours["x-accel-buffering"] == "no"
    assert events.cleaned_up.is_set()


async def test_a_quiet_stream_is_pinged_at_its_interval_and_its_events_still_come() -> None:
    events = Events(["late"], pause=0.75)
    async with streaming(lambda: EventSourceResponse(events(), ping=0.2)) as settings:
        _, body = await fetched(settings)
    content, ended = unchunked(body)
    assert ended
    frames = content.split(b"\r\n\r\n")
    pings = [frame for frame in frames if frame.startswith(b": ping - ")]
    assert 2 <= len(pings) <= 4, content
    assert frames[-2] == b"data: late"


async def test_a_client_that_goes_away_ends_the_sdk_stream_at_once() -> None:
    events = Events(["first"], then_wait=True)
    async with streaming(lambda: create_event_source_response(events())) as settings:
        reader, writer = await asyncio.open_connection(settings.host, settings.port)
        writer.write(b"GET /stream HTTP/1.1\r\nHost: test\r\n\r\n")
        async with asyncio.timeout(5):
            await reader.readuntil(b"data: first\r\n\r\n")
        writer.close()
        async with asyncio.timeout(2):
            await events.cleaned_up.wait()  # the generator was cancelled where it waited, not left for hours


async def test_a_head_request_gets_the_headers_and_no_stream() -> None:
    events = Events(EVENTS)
    async with streaming(lambda: create_event_source_response(events())) as settings:
        head, body = await fetched(settings, "HEAD")
    assert head.startswith(b"HTTP/1.1 200")
    assert headers(head)["content-type"].startswith("text/event-stream")
    assert body == b""
    assert not events.started


async def test_the_server_stopping_cancels_a_stream_still_open() -> None:
    events = Events(["first"], then_wait=True)
    settings = ServerSettings(port=free_port())

    async def endpoint(request: Request) -> Response:
        return create_event_source_response(events())

    app = Starlette(routes=[Route("/stream", endpoint)])
    async with served_app(app, settings):
        reader, writer = await asyncio.open_connection(settings.host, settings.port)
        writer.write(b"GET /stream HTTP/1.1\r\nHost: test\r\n\r\n")
        async with asyncio.timeout(5):
            await reader.readuntil(b"data: first\r\n\r\n")
    # served_app's exit is uvicorn's graceful stop; the test's own timeout bounds it
    assert events.cleaned_up.is_set()
    writer.close()


@pytest.mark.slow
async def test_a_caller_that_drops_its_stream_leaves_the_turn_to_end_and_be_kept(
    agent: ServedAgent, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """The real agent: the caller goes away after the first event; the turn runs on, a new stream of the task gets
    its end, and GetTask the whole answer. Nothing is logged as an error on the way."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": user_message(SLOW)}}
    async with http.stream("POST", agent.jsonrpc, json=body, headers=V1) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                task_id = json.loads(line[5:])["result"]["task"]["id"]
                break  # leaving the block closes the connection, mid-turn
    async with asyncio.timeout(30):
        watched = await subscription(http, agent.jsonrpc, task_id)  # the turn still runs: its end comes here
    assert final_state(watched) == "TASK_STATE_COMPLETED"
    task = (await rpc(http, agent.jsonrpc, "GetTask", {"id": task_id}))["result"]
    assert task_answer(task) == "word1 word2 word3"
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
