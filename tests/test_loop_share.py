"""OpenCode's event reader hands the loop over after every event just after a turn's first one, else once a read
has held it for a slice; only while more events of the read are in hand (the next read hands it over anyway)."""

from a2a_wrapper.backends.base import READ_SLICE
from a2a_wrapper.backends.opencode.sse_response import HURRY, LoopShare


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_every_event_hands_the_loop_over_just_after_an_eager_delivery() -> None:
    clock = Clock()
    share = LoopShare(clock)
    assert not share.after(urgent=False, more_ready=True)  # within the slice: reading on
    assert share.after(urgent=True, more_ready=True)
    clock.now += HURRY / 2
    assert [share.after(urgent=False, more_ready=True) for _ in range(3)] == [True] * 3
    clock.now += HURRY
    share.after(False, True)  # out of the window: a slice starts
    assert not share.after(urgent=False, more_ready=True)


def test_a_long_read_hands_the_loop_over_once_per_slice_counted_from_the_read() -> None:
    clock = Clock()
    share = LoopShare(clock)
    clock.now += READ_SLICE * 10  # the loop was the others' meanwhile
    share.began()
    clock.now += READ_SLICE / 2
    assert not share.after(urgent=False, more_ready=True)
    clock.now += READ_SLICE
    assert share.after(urgent=False, more_ready=True)
    assert not share.after(urgent=False, more_ready=True)


def test_nothing_more_in_hand_hands_nothing_over() -> None:
    clock = Clock()
    share = LoopShare(clock)
    assert not share.after(urgent=True, more_ready=False)  # the next read hands the loop over
    assert share.after(urgent=False, more_ready=True)  # still hurrying: an event in hand goes at once
    clock.now += HURRY + READ_SLICE * 2
    assert not share.after(urgent=False, more_ready=False)
