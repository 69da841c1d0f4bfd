"""OpenCode's event reader (backends/opencode/event_stream.py) over a real SSE response on 127.0.0.1: each event
comes with whether more is ready to read, so the reader hands the loop over only when a read would not."""

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import aiohttp
import pytest
from aiohttp import web

from a2a_wrapper.backends.opencode import event_stream
from a2a_wrapper.backends.opencode.event_stream import EventStream
from tests.helpers.aiohttp_served import aiohttp_served


def sse(*types: str) -> bytes:
    return b"".join(b"data: " + json.dumps({"type": kind, "properties": {}}).encode() + b"\n\n" for kind in types)


@asynccontextmanager
async def serving(chunks: list[bytes], next_chunk: asyncio.Event) -> AsyncIterator[str]:
    """An `/event` stream that writes each chunk once `next_chunk` is set (the first at once); a chunk that ends no
    event is followed by the next one 50 ms later, in a read of its own."""

    async def events(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for index, chunk in enumerate(chunks):
            await response.write(chunk)
            if index == len(chunks) - 1:
                break
            if chunk.endswith(b"\n\n"):
                await next_chunk.wait()
                next_chunk.clear()
            else:
                await asyncio.sleep(0.05)
        return response

    app = web.Application()
    app.router.add_get("/event", events)
    async with aiohttp_served(app) as port:
        yield f"http://127.0.0.1:{port}/"


async def test_each_event_says_whether_more_is_ready_to_read() -> None:
    next_chunk = asyncio.Event()
    chunks = [sse("a", "b"), sse("c"), sse("d")[:10], sse("d")[10:] + sse("e")]
    seen: list[tuple[str, bool]] = []
    async with (
        serving(chunks, next_chunk) as url,
        aiohttp.ClientSession(base_url=url) as http,
    ):
        async with asyncio.timeout(5):
            async for event, more_ready in EventStream("test", http)._events():
                seen.append((event["type"], more_ready))
                if not more_ready:
                    next_chunk.set()  # the server writes the next chunk only once this one is read
                if event["type"] == "e":
                    break
    # a and b came in one chunk: after a, b is ready; after the rest of a chunk, nothing is until the server writes
    assert seen == [("a", True), ("b", False), ("c", False), ("d", True), ("e", False)]


async def test_bytes_received_while_a_chunk_is_in_hand_count_as_ready() -> None:
    next_chunk = asyncio.Event()
    seen: list[tuple[str, bool]] = []
    async with (
        serving([sse("a", "b"), sse("c")], next_chunk) as url,
        aiohttp.ClientSession(base_url=url) as http,
    ):
        async with asyncio.timeout(5):
            events = EventStream("test", http)._events()
            seen.append(await anext(events))
            next_chunk.set()
            await asyncio.sleep(0.2)  # c arrives while b is still in hand: buffered, not read yet
            seen.append(await anext(events))
            seen.append(await anext(events))
            await events.aclose()
    assert [(event["type"], more_ready) for event, more_ready in seen] == [("a", True), ("b", True), ("c", False)]


def opencode_event(kind: str, session_id: str, **properties: object) -> dict[str, object]:
    return {"type": kind, "properties": {"sessionID": session_id, **properties}}


async def test_a_turn_is_given_only_the_events_it_translates_and_a_subagents_reach_its_parent() -> None:
    async with aiohttp.ClientSession() as http:
        stream = EventStream("test", http)
        subscription = stream.subscribe("ses_parent")
        child_created = {
            "type": "session.updated",
            "properties": {"info": {"id": "ses_child", "parentID": "ses_parent"}},
        }
        events = [
            opencode_event("session.status", "ses_parent", status={"type": "busy"}),
            opencode_event("message.updated", "ses_parent", info={"id": "msg_1", "role": "user"}),
            child_created,
            opencode_event("session.diff", "ses_parent", diff=[]),
            opencode_event("permission.asked", "ses_child", id="per_1"),
            opencode_event("message.part.delta", "ses_parent", partID="prt_1", delta="hi"),
            opencode_event("session.idle", "ses_parent"),
            opencode_event("session.idle", "ses_other"),
        ]
        for event in events:
            stream._route(event)
        delivered = [subscription.queue.get_nowait() for _ in range(subscription.queue.qsize())]
    assert [(event["type"], event.get("child", False)) for event in delivered] == [
        ("message.updated", False),
        ("permission.asked", True),
        ("message.part.delta", False),
        ("session.idle", False),
    ]
    assert stream.parent_of("ses_child") == "ses_parent"


@asynccontextmanager
async def beating(interval: float | None) -> AsyncIterator[str]:
    """An `/event` stream that sends one event, then a heartbeat every `interval` seconds (None: nothing more)."""
    over = asyncio.Event()

    async def events(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(sse("server.connected"))
        while not over.is_set():
            with suppress(TimeoutError):
                await asyncio.wait_for(over.wait(), interval)
            if interval is not None:
                await response.write(sse("server.heartbeat"))
        return response

    app = web.Application()
    app.router.add_get("/event", events)
    async with aiohttp_served(app) as port:
        try:
            yield f"http://127.0.0.1:{port}/"
        finally:
            over.set()


async def read_for(url: str, seconds: float) -> tuple[list[str], BaseException | None, float]:
    """The event types read from the stream within `seconds`, the error that ended the reading (None: time ran
    out), and when it ended."""
    seen: list[str] = []
    loop = asyncio.get_running_loop()
    start = loop.time()
    async with aiohttp.ClientSession(base_url=url) as http:
        try:
            async with asyncio.timeout(seconds) as deadline:
                async for event, _ in EventStream("test", http)._events():
                    seen.append(event["type"])
        except TimeoutError as exc:
            if deadline.expired():
                return seen, None, loop.time() - start
            return seen, exc, loop.time() - start
    return seen, None, loop.time() - start


async def test_a_server_that_falls_silent_is_given_up_after_the_bound_and_one_that_beats_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(event_stream, "SILENCE", 0.3)
    async with beating(None) as url:
        seen, error, after = await read_for(url, 2)
    assert seen == ["server.connected"]
    assert str(error) == "no byte from the server for 0.3 s"
    assert after >= 0.3  # not before the bound
    async with beating(0.05) as url:
        seen, error, _ = await read_for(url, 1)
    assert error is None  # still reading when the time ran out
    assert seen.count("server.heartbeat") > 5
