"""uvicorn's server with a main loop that wakes once a second, not ten times, and at once when told to exit.

uvicorn's `Server.main_loop` sleeps 0.1 s between looks at `should_exit` (its date header is refreshed on every
tenth). An idle agent spent 1.4 ms of CPU a second on this VM, most of it those ten wake-ups of its loop; a
fleet pays that per agent. Here the loop waits one second, uvicorn's date-header interval, or until
`should_exit` is set: setting it (a signal handler, the fleet, a test) wakes the loop through
`call_soon_threadsafe`, which is safe from a signal handler and from another thread, so a stop starts as soon as
it did before. The header, `limit_max_requests` and `callback_notify` are uvicorn's own `on_tick`, called with
the count of tenths uvicorn would have reached.
"""

import asyncio
import contextlib

import uvicorn

TICK = 1.0  # seconds between looks when nothing wakes the loop
TENTHS_PER_TICK = 10  # uvicorn counts its ticks in tenths of a second
_COUNTER_WRAP = 864000  # as uvicorn's main_loop wraps its counter


class QuietServer(uvicorn.Server):
    _exit_wake: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _should_exit = False

    @property  # type: ignore[override]  # uvicorn's is a plain attribute
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._should_exit = value
        if value and self._loop is not None and self._exit_wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing is waiting any more
                self._loop.call_soon_threadsafe(self._exit_wake.set)

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._exit_wake = asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + TENTHS_PER_TICK) % _COUNTER_WRAP
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK):
                    await self._exit_wake.wait()
            should_exit = await self.on_tick(counter)
