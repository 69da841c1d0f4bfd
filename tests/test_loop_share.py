"""OpenCode's event reader hands the loop over after every event just after a turn's first one, else per slice."""

import asyncio

from a2a_wrapper.backends.base import READ_SLICE
from a2a_wrapper.backends.opencode.event_stream import HURRY, LoopShare


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def handed_over(share: LoopShare, urgent: bool) -> bool:
    """Whether `after` let another callback run."""
    ran: list[bool] = []
    asyncio.get_running_loop().call_soon(ran.append, True)
    await share.after(urgent=urgent)
    return bool(ran)


async def test_every_event_hands_the_loop_over_just_after_an_eager_delivery() -> None:
    clock = Clock()
    share = LoopShare(clock)
    assert not await handed_over(share, urgent=False)  # within the slice: reading on
    assert await handed_over(share, urgent=True)
    clock.now += HURRY / 2
    assert [await handed_over(share, urgent=False) for _ in range(3)] == [True] * 3
    clock.now += HURRY
    await share.after(urgent=False)  # out of the window: a slice starts
    assert not await handed_over(share, urgent=False)


async def test_a_burst_hands_the_loop_over_once_per_slice() -> None:
    clock = Clock()
    share = LoopShare(clock)
    clock.now += READ_SLICE / 2
    assert not await handed_over(share, urgent=False)
    clock.now += READ_SLICE
    assert await handed_over(share, urgent=False)
    assert not await handed_over(share, urgent=False)
