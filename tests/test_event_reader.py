"""OpenCode's event reader (backends/opencode/event_stream.py, sse_response.py) against an HTTP server on 127.0.0.1
that writes its answer byte for byte as each test says: every event reaches its turn once and in order however
the bytes are cut, the loop is handed over after a waiting turn's event, and the stream's end, loss, refusal and
silence are each told apart."""

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import pytest

from a2a_wrapper.backends.opencode import event_stream, sse_response
from a2a_wrapper.backends.opencode.event_stream import RECONNECTED, EventStream
from a2a_wrapper.backends.opencode.json_http import MAX_HEAD, JsonHttp, ResponseError

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
END = b"0\r\n\r\n"
Answer = Callable[[asyncio.StreamWriter, int, asyncio.Event], Awaitable[None]]
# writes the answer to the n-th connection; waits for the event to hold it open until the test is over


def opencode_event(kind: str, session_id: str, **properties: object) -> dict[str, object]:
    return {"type": kind, "properties": {"sessionID": session_id, **properties}}


def delta(text: str, session_id: str = "ses_1") -> dict[str, object]:
    return opencode_event("message.part.delta", session_id, partID="prt_1", field="text", delta=text)


def sse(*events: dict[str, object], line_end: bytes = b"\n") -> bytes:
    return b"".join(b"data: " + json.dumps(event).encode() + line_end * 2 for event in events)


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


@asynccontextmanager
async def serving(answer: Answer) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A server that reads each request's head, keeps it, and has `answer` write the rest; yields its URL and the
    heads received. Its connections are closed before it ends."""
    heads: list[bytes] = []
    over = asyncio.Event()
    handlers: list[asyncio.Task[None]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        try:
            await answer(writer, len(heads), over)
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/", heads
    finally:
        over.set()
        server.close()
        await asyncio.gather(*handlers, return_exceptions=True)


def drained(queue: event_stream.EventQueue) -> list[dict[str, Any]]:
    return [queue.get_nowait() for _ in range(queue.qsize())]


async def test_every_event_reaches_its_turn_once_and_in_order_however_the_bytes_are_cut() -> None:
    first, second, third = delta("a"), delta("b"), delta("c")
    other_session, not_translated = delta("x", "ses_2"), opencode_event("session.status", "ses_1")
    crlf = sse(delta("d"), line_end=b"\r\n")

    async def answer(writer: asyncio.StreamWriter, *_: object) -> None:
        body = chunk(sse(first) + sse(second)[:9]) + chunk(sse(second)[9:]) + chunk(sse(third))
        pieces = [HEAD + body[:40], body[40:-3], body[-3:] + chunk(sse(other_session, not_translated))]
        pieces += [chunk(crlf[:-1]), chunk(crlf[-1:]) + END]
        for piece in pieces:  # each in a read of its own
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.02)

    async with serving(answer) as (url, heads):
        stream = EventStream("test", JsonHttp(url, {"x-opencode-directory": "/work"}))
        subscription = stream.subscribe("ses_1")
        async with asyncio.timeout(5):
            await stream.follow()  # the server ended the stream: it returns
    assert drained(subscription.queue) == [first, second, third, delta("d")]
    assert heads[0].startswith(b"GET /event HTTP/1.1\r\n")
    assert b"\r\nx-opencode-directory: /work\r\n" in heads[0]
    assert stream.connected.is_set()


async def first_wake(eager: bool, chunked: bool) -> tuple[dict[str, Any], int]:
    """The event a turn waiting on its queue wakes with, when three arrive in one read (in one chunk, or each in a
    chunk of its own as OpenCode sends them), and how many more were in its queue by then."""
    events = (delta("1"), delta("2"), delta("3"))
    body = b"".join(chunk(sse(event)) for event in events) if chunked else chunk(sse(*events))

    async def answer(writer: asyncio.StreamWriter, _: int, over: asyncio.Event) -> None:
        writer.write(HEAD + body)
        await writer.drain()
        await over.wait()

    async with serving(answer) as (url, _):
        stream = EventStream("test", JsonHttp(url, {}))
        subscription = stream.subscribe("ses_1")
        subscription.eager = eager
        reader = asyncio.create_task(stream.follow())
        try:
            async with asyncio.timeout(5):
                event = await subscription.queue.get()
                return event, subscription.queue.qsize()
        finally:
            reader.cancel()
            with suppress(asyncio.CancelledError):
                await reader


async def test_a_turn_waiting_for_its_first_event_gets_it_before_the_reader_cuts_out_the_rest_of_the_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sse_response, "READ_SLICE", 10.0)  # no read here lasts a slice, however slow the machine
    for chunked in (False, True):
        assert await first_wake(eager=True, chunked=chunked) == (delta("1"), 0)
        # a turn past its first text: the read's events come together
        assert await first_wake(eager=False, chunked=chunked) == (delta("1"), 2)


async def test_a_reader_cancelled_mid_stream_closes_its_connection_and_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def answer(writer: asyncio.StreamWriter, _: int, over: asyncio.Event) -> None:
        writer.write(HEAD + chunk(sse(delta("a"))))
        await writer.drain()
        await over.wait()

    async with serving(answer) as (url, _):
        stream = EventStream("test", JsonHttp(url, {}))
        subscription = stream.subscribe("ses_1")
        reader = asyncio.create_task(stream.follow())
        async with asyncio.timeout(5):
            assert await subscription.queue.get() == delta("a")
            reader.cancel()
            with suppress(asyncio.CancelledError):
                await reader
            await asyncio.sleep(0.1)  # the connection's loss reaches the reader's protocol
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []


async def test_a_refused_request_and_a_connection_cut_short_raise_and_say_which() -> None:
    async def refuse(writer: asyncio.StreamWriter, *_: object) -> None:
        writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")

    async def cut(writer: asyncio.StreamWriter, *_: object) -> None:
        writer.write(HEAD + chunk(sse(delta("a")))[:-5])  # the chunk never ends

    async with serving(refuse) as (url, _):
        with pytest.raises(ResponseError, match="the server answered 401 to the event stream's request"):
            await EventStream("test", JsonHttp(url, {})).follow()
    async with serving(cut) as (url, _):
        with pytest.raises(ConnectionError, match="closed the connection before the stream's end"):
            await EventStream("test", JsonHttp(url, {})).follow()


async def test_a_large_first_event_in_the_heads_read_is_read_and_a_head_without_end_is_refused() -> None:
    large = delta("x" * 100_000)

    async def at_once(writer: asyncio.StreamWriter, *_: object) -> None:
        writer.write(HEAD + chunk(sse(large)) + END)  # the head and 100 kB of event, in one write

    async def endless_head(writer: asyncio.StreamWriter, *_: object) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\n" + b"X-Filler: " + b"y" * (MAX_HEAD + 10))  # no blank line, ever

    async with serving(at_once) as (url, _):
        stream = EventStream("test", JsonHttp(url, {}))
        subscription = stream.subscribe("ses_1")
        await asyncio.wait_for(stream.follow(), 5)
    assert drained(subscription.queue) == [large]
    async with serving(endless_head) as (url, _):
        with pytest.raises(ResponseError, match=f"the answer's head runs past {MAX_HEAD} bytes"):
            await asyncio.wait_for(EventStream("test", JsonHttp(url, {})).follow(), 5)


async def test_a_turn_is_given_only_the_events_it_translates_and_a_subagents_reach_its_parent() -> None:
    stream = EventStream("test", JsonHttp("http://127.0.0.1:9/", {}))
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
    delivered = drained(subscription.queue)
    assert [(event["type"], event.get("child", False)) for event in delivered] == [
        ("message.updated", False),
        ("permission.asked", True),
        ("message.part.delta", False),
        ("session.idle", False),
    ]
    assert stream.parent_of("ses_child") == "ses_parent"


async def test_a_stream_lost_and_regained_tells_its_turns_that_events_may_be_missing() -> None:
    async def answer(writer: asyncio.StreamWriter, connection: int, over: asyncio.Event) -> None:
        writer.write(HEAD + chunk(sse(delta(f"on connection {connection}"))))
        await writer.drain()
        if connection > 1:  # the first is cut after its event
            await over.wait()

    async with serving(answer) as (url, heads):
        stream = EventStream("test", JsonHttp(url, {}))
        subscription = stream.subscribe("ses_1")
        reader = asyncio.create_task(stream.run())
        try:
            async with asyncio.timeout(5):
                seen = [await subscription.queue.get() for _ in range(3)]
        finally:
            reader.cancel()
            with suppress(asyncio.CancelledError):
                await reader
    assert seen == [delta("on connection 1"), {"type": RECONNECTED, "properties": {}}, delta("on connection 2")]
    assert len(heads) == 2


async def test_a_backend_restarted_at_a_new_address_is_read_at_once_though_the_old_connection_hangs() -> None:
    asked = asyncio.Event()

    async def hangs(writer: asyncio.StreamWriter, _: int, over: asyncio.Event) -> None:
        asked.set()
        await over.wait()  # takes the request and never answers, as a sandbox's socket may for a server starting

    async def answers(writer: asyncio.StreamWriter, _: int, over: asyncio.Event) -> None:
        writer.write(HEAD + chunk(sse(delta("from the new address"))))
        await writer.drain()
        await over.wait()

    async with serving(hangs) as (old, _), serving(answers) as (new, _):
        stream = EventStream("test", JsonHttp(old, {}))
        subscription = stream.subscribe("ses_1")
        reader = asyncio.create_task(stream.run())
        try:
            async with asyncio.timeout(5):
                await asked.wait()
                stream.use(JsonHttp(new, {}))
                restarted = asyncio.get_running_loop().time()
                assert await subscription.queue.get() == delta("from the new address")
            assert asyncio.get_running_loop().time() - restarted < 0.2  # no backoff, no silence bound waited out
        finally:
            reader.cancel()
            with suppress(asyncio.CancelledError):
                await reader


def beating(interval: float | None) -> Answer:
    """One event, then a heartbeat every `interval` seconds (None: nothing more) until the test is over."""

    async def answer(writer: asyncio.StreamWriter, _: int, over: asyncio.Event) -> None:
        writer.write(HEAD + chunk(sse({"type": "server.connected", "properties": {}})))
        await writer.drain()
        while not over.is_set():
            with suppress(TimeoutError):
                await asyncio.wait_for(over.wait(), interval)
            if interval is not None:
                writer.write(chunk(sse({"type": "server.heartbeat", "properties": {}})))
                await writer.drain()

    return answer


async def test_a_server_that_falls_silent_is_given_up_after_the_bound_and_one_that_beats_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(event_stream, "SILENCE", 0.3)
    loop = asyncio.get_running_loop()
    async with serving(beating(None)) as (url, _):
        stream = EventStream("test", JsonHttp(url, {}))
        start = loop.time()
        with pytest.raises(TimeoutError, match=r"^no byte from the server for 0\.3 s$"):
            await asyncio.wait_for(stream.follow(), 2)
        assert loop.time() - start >= 0.3  # not before the bound
        assert stream.connected.is_set()  # its first event was read
    async with serving(beating(0.05)) as (url, _):
        with pytest.raises(TimeoutError) as ended:
            async with asyncio.timeout(1) as deadline:
                await EventStream("test", JsonHttp(url, {})).follow()
        assert deadline.expired(), ended.value  # still reading when the time ran out
