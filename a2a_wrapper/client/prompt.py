"""The person at the terminal: a prompt on stderr, a line from stdin, read without holding the event loop.

Lines are read by a daemon thread from file descriptor 0, so that a prompt nobody answers never keeps the
process alive: `send` may stop waiting (the agent went away) while the read is still blocked.
"""

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TextIO

Ask = Callable[[str], Awaitable[str | None]]  # shows a prompt, returns the line typed (None at end of input)
_CHUNK = 4096


class StdinLines:
    """Lines of stdin, read ahead by one daemon thread started at the first `readline`."""

    def __init__(self) -> None:
        self._lines: asyncio.Queue[str | None] | None = None

    async def readline(self) -> str | None:
        if self._lines is None:
            self._lines = asyncio.Queue()
            reader = threading.Thread(target=self._read, args=(asyncio.get_running_loop(), self._lines), daemon=True)
            reader.start()
        line = await self._lines.get()
        if line is None:
            self._lines.put_nowait(None)  # end of input stays the end
        return line

    @staticmethod
    def _read(loop: asyncio.AbstractEventLoop, lines: "asyncio.Queue[str | None]") -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(0, _CHUNK)
            except OSError:
                chunk = b""
            pending += chunk
            *complete, pending = pending.split(b"\n")
            found = [line.decode(errors="replace") + "\n" for line in complete]
            if not chunk:
                found += [pending.decode(errors="replace")] if pending else []
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                for line in [*found, *([None] if not chunk else [])]:
                    loop.call_soon_threadsafe(lines.put_nowait, line)
            if not chunk:
                return


def read_line(err: TextIO, lines: StdinLines | None = None) -> Ask:
    """Prompts on stderr and reads a line from stdin; None at end of input."""
    source = lines or StdinLines()

    async def ask(prompt: str) -> str | None:
        err.write(prompt)
        err.flush()
        line = await source.readline()
        if line is not None and not sys.stdin.isatty():  # nothing echoed the answer: show it, end the line
            err.write(line if line.endswith("\n") else line + "\n")
        return line

    return ask
