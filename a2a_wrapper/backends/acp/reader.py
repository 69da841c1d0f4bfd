"""The ACP agent's stdout as the acp library reads it: text chunks go straight to their turn, all else to the library.

The library reads every buffered message before it runs the task each one becomes, so a burst (a reply of 300
chunks) would be parsed whole before the turn saw its first chunk. So the library gets one message per pass
of the loop: after a line handed to it, the next read gives the loop away first, and the task made of that
line runs before anything read later is delivered (order is kept across both paths). A text chunk
(chunks.py) skips the library: it goes to its turn's queue at once, and the loop is given away only when the
turn was waiting for it, or READ_SLICE after the last time, as OpenCode's event stream does.
"""

import asyncio
from collections.abc import Callable

from a2a_wrapper.backends.acp.chunks import read_chunk
from a2a_wrapper.backends.base import READ_SLICE
from a2a_wrapper.events import StreamEvent

Deliver = Callable[[str, StreamEvent], bool]  # (session, event) -> its turn was waiting for it


class YieldingReader(asyncio.StreamReader):
    """Reads are delegated to the process's own reader (this one is never fed); a StreamReader, as the acp
    library checks."""

    def __init__(self, reader: asyncio.StreamReader, deliver: Deliver) -> None:
        super().__init__()
        self._source = reader
        self._deliver = deliver
        self._library_owed = False  # a line went to the library: its task runs before the next delivery
        self._yielded = 0.0

    async def readuntil(self, separator: bytes = b"\n") -> bytes:  # type: ignore[override]
        loop = asyncio.get_running_loop()
        while True:
            line = await self._source.readuntil(separator)
            if self._library_owed or loop.time() - self._yielded > READ_SLICE:
                await self._give_way(loop)
            chunk = read_chunk(line)
            if chunk is None:
                self._library_owed = True
                return line
            if self._deliver(*chunk):
                await self._give_way(loop)

    async def readexactly(self, n: int) -> bytes:
        return await self._source.readexactly(n)

    async def _give_way(self, loop: asyncio.AbstractEventLoop) -> None:
        await asyncio.sleep(0)
        self._library_owed = False
        self._yielded = loop.time()
