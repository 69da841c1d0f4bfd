"""The event loop a2a-wrap runs on: uvloop's (libuv), or asyncio's own where uvloop is not installed.

Measured on a 2-core VM (2026-12-04, 400 wrapped trivial turns a run, three pairs): the agent's process spent
0.3-0.7 ms less CPU a turn on uvloop's loop (of 6-7 ms); in `bench/overhead.py` the difference was within its noise.
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
