"""OpenCode's event reader hands the loop over after every event just after a turn's first one, else per slice; only
while more is ready to read (otherwise its next read waits, which hands the loop over)."""

import asyncio

from a2a_wrapper.backends.base import READ_SLICE
from a2a_wrapper.backends.opencode.event_stream import HURRY, LoopShare


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def handed_over(share: LoopShare, urgent: bool, more_ready: bool = True) -> bool:
    """Whether `after` let another callback run."""
    ran: list[bool] = []
    asyncio.get_running_loop().call_soon(ran.append, True)
    await share.after(urgent, more_ready)
    return bool(ran)


async def test_every_event_hands_the_loop_over_just_after_an_eager_delivery() -> None:
    clock = Clock()
    share = LoopShare(clock)
    assert not await handed_over(share, urgent=False)  # within the slice: reading on
    assert await handed_over(share, urgent=True)
    clock.now += HURRY / 2
    assert [await handed_over(share, urgent=False) for _ in range(3)] == [True] * 3
    clock.now += HURRY
    await share.after(False, True)  # out of the window: a slice starts
    assert not await handed_over(share, urgent=False)


async def test_a_burst_hands_the_loop_over_once_per_slice() -> None:
    clock = Clock()
    share = LoopShare(clock)
    clock.now += READ_SLICE / 2
    assert not await handed_over(share, urgent=False)
    clock.now += READ_SLICE
    assert await handed_over(share, urgent=False)
    assert not await handed_over(share, urgent=False)


async def test_nothing_ready_to_read_hands_nothing_over_and_starts_a_slice() -> None:
    clock = Clock()
    share = LoopShare(clock)
    assert not await handed_over(share, urgent=True, more_ready=False)  # the next read waits for the socket
    assert await handed_over(share, urgent=False)  # still hurrying: a buffered event goes at once
    clock.now += HURRY + READ_SLICE * 2
    assert not await handed_over(share, urgent=False, more_ready=False)
    clock.now += READ_SLICE / 2
    assert not await handed_over(share, urgent=False)  # the read that waited began a slice
