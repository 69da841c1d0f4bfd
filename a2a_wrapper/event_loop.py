"""The event loop a2a-wrap runs on: uvloop's (libuv), or asyncio's own where uvloop is not installed.

Measured with `bench/overhead.py` on a 2-core VM: a wrapped trivial turn costs the agent's process 0.4-1.1 ms
less CPU on uvloop's loop (of ~7 ms), and uvloop sends what a turn writes in one loop pass as one write.
Children are started by `spawn`, never by the loop, so both loops start them alike.
"""

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

try:
    import uvloop
except ImportError:  # a platform uvloop does not build for
    uvloop = None  # type: ignore[assignment]

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    return uvloop.new_event_loop() if uvloop is not None else asyncio.new_event_loop()


def run(main: Coroutine[Any, Any, T]) -> T:
    """Runs `main` to its end on a new loop, as `asyncio.run` does."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)
