"""OpenCode's event stream split into events from its bytes as they arrive: any chunking, every SSE line ending,
events far past aiohttp's line limit, and one past the bound dropped without losing the next."""

import logging

import pytest

from a2a_wrapper.backends.opencode.sse_events import sse_data

STREAM = (
    b": a comment, then a blank line\n\n"
    b'data: {"type":"server.connected"}\n\n'
    b"event: ignored\nid: 7\ndata: first line\ndata:second line\ndata\n\n"
    b"retry: 100\n\n"  # no data: not dispatched
    b'data: {"n":2}\r\n\r\n'
    b"data: cr only\r\rdata:  two spaces\n\n\n\n"
    b"data: the end, cut short"
)
EVENTS = [
    b'{"type":"server.connected"}',
    b"first line\nsecond line\n",
    b'{"n":2}',
    b"cr only",
    b" two spaces",
]


async def chunked(*chunks: bytes):  # type: ignore[no-untyped-def]
    for chunk in chunks:
        yield chunk


async def events_of(*chunks: bytes, max_event: int = 2**20) -> list[bytes]:
    return [data async for data in sse_data(chunked(*chunks), max_event=max_event)]


async def test_a_stream_in_one_chunk_gives_each_event_s_data() -> None:
    assert await events_of(STREAM) == EVENTS


async def test_the_same_events_at_every_point_a_chunk_can_end() -> None:
    for cut in range(1, len(STREAM)):
        assert await events_of(STREAM[:cut], STREAM[cut:]) == EVENTS, cut
    assert await events_of(*(STREAM[i : i + 1] for i in range(len(STREAM)))) == EVENTS, "a byte at a time"


async def test_each_event_comes_as_soon_as_the_chunk_that_ends_it() -> None:
    consumed = 0

    async def counted(chunks: list[bytes]):  # type: ignore[no-untyped-def]
        nonlocal consumed
        for chunk in chunks:
            consumed += 1
            yield chunk

    for ending in (b"\n", b"\r\n", b"\r"):
        event = b"data: x" + ending + ending
        for cut in range(1, len(event)):
            consumed = 0
            seen = [(data, consumed) async for data in sse_data(counted([event[:cut], event[cut:], b"data: y"]))]
            # a CR that ends a chunk waits for the next byte, which may make it a CRLF
            assert seen == [(b"x", 3 if ending == b"\r" else 2)], (ending, cut)


async def test_an_event_past_aiohttp_s_line_limit_arrives_whole() -> None:
    big = b'{"text":"' + b"x" * 1_000_000 + b'"}'
    stream = b"data: " + big + b"\n\ndata: next\n\n"
    pieces = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]
    assert await events_of(*pieces, max_event=2 * len(stream)) == [big, b"next"]


@pytest.mark.parametrize("chunk", [1000, 4096, 65536])
async def test_an_event_past_the_bound_is_dropped_and_the_next_one_still_comes(
    chunk: int, caplog: pytest.LogCaptureFixture
) -> None:
    stream = b"data: before\n\n" + b"data: " + b"y" * 50_000 + b"\n\ndata: after\n\n"
    pieces = [stream[i : i + chunk] for i in range(0, len(stream), chunk)]
    with caplog.at_level(logging.WARNING):
        assert await events_of(*pieces, max_event=10_000) == [b"before", b"after"]
    assert "an event of more than 10000 bytes was dropped" in caplog.text
