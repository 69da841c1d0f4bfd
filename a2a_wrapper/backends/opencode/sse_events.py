"""Server-sent events' data, split from a byte stream as it arrives, of any size up to MAX_EVENT.

aiohttp reads a response line by line only up to its buffer's limit (128 KiB by default, somewhat more as the
buffer grows). OpenCode sends a message's whole text in one event (`message.part.updated`), so a message of 1 MB,
well within what the agent accepts, broke the event stream with aiohttp's `LineTooLong`: it reconnected, the
turn's events were gone, and the task failed. Here the bytes are split into events by their blank lines, so an
event's size is bounded by MAX_EVENT alone; one past it is dropped with a warning and the stream goes on. For
OpenCode's usual event, one `data:` line, that is one split and one slice instead of a readline per line
(9.5 -> 2.5 us an event, the JSON included, in a burst).

The SSE rules kept (WHATWG HTML, "Interpreting an event stream"): lines end with LF, CRLF or CR; an event ends at
a blank line; its `data:` lines are joined with LF, one space after the colon dropped; comments (`:`) and other
fields are ignored, an event without data is not dispatched, and a partial event at the stream's end is dropped.
An event is handed over with the chunk that ends it; only a CR at a chunk's very end waits for the next byte,
which may make it a CRLF (OpenCode ends its lines with LF).
"""

import logging
from collections.abc import AsyncIterable, AsyncIterator

log = logging.getLogger(__name__)

MAX_EVENT = 64 * 2**20  # bytes: more than any message the agent accepts (4 MiB of text), escaped
_END = b"\n\n"


async def sse_data(chunks: AsyncIterable[bytes], max_event: int = MAX_EVENT) -> AsyncIterator[bytes]:
    """The data of each event in `chunks` (a response body as it arrives)."""
    splitter = SseSplitter(max_event)
    async for chunk in chunks:
        for data in splitter.feed(chunk):
            yield data


class SseSplitter:
    """Events split from a byte stream fed a chunk at a time: `feed` gives the data of the events each chunk ends."""

    def __init__(self, max_event: int = MAX_EVENT) -> None:
        self._max_event = max_event
        self._pending: list[bytes] = []  # the start of an event not ended yet
        self._size = 0
        self._carry = b""  # a CR that ended the last chunk: with the next byte it may be one CRLF
        self._dropping = False  # inside an event past max_event, until its end

    def feed(self, chunk: bytes) -> list[bytes]:
        if self._carry or b"\r" in chunk:
            chunk, self._carry = _lf_only(self._carry + chunk)
            if not chunk:
                return []  # a lone CR, held back
        pending = self._pending
        ends = _END in chunk or (chunk[:1] == b"\n" and pending[-1:] != [] and pending[-1].endswith(b"\n"))
        if not ends:
            self._held(chunk)
            return []
        text = b"".join((*pending, chunk)) if pending else chunk
        events = text.split(_END)
        if self._dropping:
            del events[0]  # the rest of the dropped event
        rest = events.pop()
        datas = []
        for event in events:
            if len(event) > self._max_event:
                _dropped(self._max_event)
            elif (data := _data(event)) is not None:
                datas.append(data)
        self._dropping = len(rest) > self._max_event
        if self._dropping:
            _dropped(self._max_event)
            rest = b"\n" if rest.endswith(b"\n") else b""
        self._pending, self._size = ([rest], len(rest)) if rest else ([], 0)
        return datas

    def _held(self, chunk: bytes) -> None:
        """A chunk that ends no event: kept as the start of one, unless that event is past max_event."""
        if not self._dropping:
            self._pending.append(chunk)
            self._size += len(chunk)
            self._dropping = self._size > self._max_event
            if self._dropping:
                _dropped(self._max_event)
        if self._dropping:
            self._pending = [b"\n"] if chunk.endswith(b"\n") else []  # the event's end may straddle two chunks


def _dropped(max_event: int) -> None:
    log.warning("an event of more than %d bytes was dropped", max_event)


def _lf_only(text: bytes) -> tuple[bytes, bytes]:
    """The text with CRLF and CR as LF, and a CR at its end held back (a CRLF may be split between chunks)."""
    carry = b""
    if text.endswith(b"\r"):
        text, carry = text[:-1], b"\r"
    return text.replace(b"\r\n", b"\n").replace(b"\r", b"\n"), carry


def _data(event: bytes) -> bytes | None:
    """The event's data fields joined, or None when it has none."""
    if event.startswith(b"data: ") and b"\n" not in event:
        return event[6:]  # OpenCode's events: one line of data
    data = [_value(line) for line in event.split(b"\n") if line == b"data" or line.startswith(b"data:")]
    return b"\n".join(data) if data else None


def _value(line: bytes) -> bytes:
    value = line[5:]
    return value[1:] if value.startswith(b" ") else value
