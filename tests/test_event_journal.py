"""The journal of streamed events on SQLite (state/event_journal.py): positions that rise across tasks and runs,
the events after a position then the live ones, and what it no longer keeps, which a resume is refused for."""

import asyncio

import pytest
from a2a.server.cluster import TaskVersion, VersionedEvent
from a2a.types import TaskState, TaskStatus, TaskStatusUpdateEvent

from a2a_wrapper.state import event_journal
from a2a_wrapper.state.event_journal import LocalJournal


def update(task_id: str, state: TaskState = TaskState.TASK_STATE_WORKING) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id=task_id, context_id="c", status=TaskStatus(state=state))


async def published(journal: LocalJournal, task_id: str, event: TaskStatusUpdateEvent) -> int:
    await journal.publish(task_id, VersionedEvent(event=event, version=TaskVersion.MISSING))
    position = journal.position_of(task_id, event)
    assert position is not None
    return position


async def test_positions_rise_and_name_the_event_published_not_an_equal_one() -> None:
    journal = LocalJournal()
    first, second = update("t"), update("t")
    a = await published(journal, "t", first)
    other = await published(journal, "u", update("u"))
    b = await published(journal, "t", second)
    assert a < other < b
    assert await journal.event_at("t", a) is first and await journal.event_at("t", other) is None, "u's, not t's"
    assert journal.position_of("t", update("t")) is None, "an equal event that was not published has none"


async def test_a_later_run_never_gives_a_position_of_an_earlier_one() -> None:
    earlier = LocalJournal()
    last = await published(earlier, "t", update("t"))
    await asyncio.sleep(0.002)
    later = LocalJournal()
    assert await published(later, "t", update("t")) > last
    assert await later.event_at("t", last) is None


async def test_events_after_a_position_then_the_live_ones_in_order() -> None:
    journal = LocalJournal()
    start = await published(journal, "t", update("t"))
    kept = [update("t") for _ in range(3)]
    for event in kept[:2]:
        await published(journal, "t", event)

    async def read(count: int) -> list[TaskStatusUpdateEvent]:
        got = []
        async for _, event in journal.events_after("t", start):
            got.append(event)
            if len(got) == count:
                return got
        return got

    async with asyncio.timeout(5):
        reading = asyncio.create_task(read(3))
        await asyncio.sleep(0.05)
        assert not reading.done(), "waits for the live one"
        await published(journal, "t", kept[2])
        assert [e is k for e, k in zip(await reading, kept, strict=True)] == [True, True, True]


async def test_what_is_no_longer_kept_is_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_journal, "KEPT_EVENTS", 3)
    monkeypatch.setattr(event_journal, "KEPT_IN_ALL", 5)
    journal = LocalJournal()
    old = await published(journal, "t", update("t"))
    for _ in range(3):
        await published(journal, "t", update("t"))
    assert await journal.event_at("t", old) is None, "pushed out of its task's last 3"
    kept = await published(journal, "u", update("u"))
    for _ in range(3):
        await published(journal, "v", update("v"))
    assert await journal.event_at("t", old + 1) is None, "t, published least recently, forgotten whole past 5 in all"
    assert await journal.event_at("u", kept) is not None
