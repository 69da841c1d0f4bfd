"""LoopQueue (loop_queue.py) held to asyncio.Queue: the same operations on both give the same results, errors and
wake-up order; its 3.13 `shutdown` raises its own QueueShutDown (the SDK's is tests/test_sdk_queues.py)."""

import asyncio
import random
from typing import Any

import pytest

from a2a_wrapper.loop_queue import LoopQueue, QueueShutDown

Queue = LoopQueue[int] | asyncio.Queue[int]


def _apply(queue: Queue, operation: str, item: int) -> object:
    try:
        match operation:
            case "put":
                queue.put_nowait(item)
                return None
            case "get":
                return queue.get_nowait()
            case "done":
                queue.task_done()
                return None
            case _:
                return (queue.qsize(), queue.empty(), queue.full())
    except (asyncio.QueueFull, asyncio.QueueEmpty, ValueError) as exc:
        return type(exc).__name__


@pytest.mark.parametrize("maxsize", [0, 1, 3])
@pytest.mark.parametrize("seed", range(40))
async def test_the_same_operations_give_what_asyncio_queue_gives(maxsize: int, seed: int) -> None:
    script = random.Random(seed * 7 + maxsize)
    operations = [(script.choice(["put", "put", "get", "done", "look"]), step) for step in range(60)]
    ours, theirs = LoopQueue[int](maxsize), asyncio.Queue[int](maxsize)
    assert [_apply(ours, *op) for op in operations] == [_apply(theirs, *op) for op in operations]
    assert ours.unfinished == theirs._unfinished_tasks  # type: ignore[attr-defined]


async def _getters_served(queue: Any, cancel_first_after_wake: bool) -> list[tuple[int, object]]:
    served: list[tuple[int, object]] = []

    async def getter(number: int) -> None:
        served.append((number, await queue.get()))

    tasks = [asyncio.create_task(getter(number)) for number in range(4)]
    await asyncio.sleep(0)
    queue.put_nowait(10)  # wakes getter 0
    if cancel_first_after_wake:
        tasks[0].cancel()  # before it ran: its wake-up goes to getter 1
    queue.put_nowait(11)
    queue.put_nowait(12)
    await asyncio.sleep(0.01)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return served


@pytest.mark.parametrize("cancel_first_after_wake", [False, True])
async def test_waiting_getters_are_served_in_asyncio_queues_order(cancel_first_after_wake: bool) -> None:
    ours = await _getters_served(LoopQueue[int](), cancel_first_after_wake)
    assert ours == await _getters_served(asyncio.Queue[int](), cancel_first_after_wake)
    assert len(ours) == 3


async def _putters_admitted(queue: Any) -> list[int]:
    for item in (1, 2):
        queue.put_nowait(item)
    putters = [asyncio.create_task(queue.put(item)) for item in (3, 4, 5)]
    await asyncio.sleep(0)
    taken = [queue.get_nowait() for _ in range(2)]  # room for two: the first two putters get in
    await asyncio.sleep(0.01)
    taken += [queue.get_nowait() for _ in range(queue.qsize())]
    await asyncio.sleep(0.01)
    taken += [queue.get_nowait() for _ in range(queue.qsize())]
    await asyncio.gather(*putters)
    return taken


async def test_putters_on_a_full_queue_get_in_as_asyncio_queues_do() -> None:
    ours = await _putters_admitted(LoopQueue[int](maxsize=2))
    assert ours == await _putters_admitted(asyncio.Queue[int](maxsize=2)) == [1, 2, 3, 4, 5]


async def test_join_waits_for_every_item_to_be_done() -> None:
    queue = LoopQueue[int]()
    await asyncio.wait_for(queue.join(), 1)  # nothing unfinished: at once
    queue.put_nowait(1)
    queue.put_nowait(2)
    joined = asyncio.create_task(queue.join())
    queue.get_nowait()
    queue.task_done()
    await asyncio.sleep(0)
    assert not joined.done()
    queue.get_nowait()
    queue.task_done()
    await asyncio.wait_for(joined, 1)
    with pytest.raises(ValueError, match="too many times"):
        queue.task_done()


async def test_shutdown_refuses_puts_and_ends_gets_once_drained() -> None:
    queue = LoopQueue[int]()
    queue.put_nowait(1)
    waiting = LoopQueue[int]()
    getter = asyncio.create_task(waiting.get())
    await asyncio.sleep(0)
    for shut in (queue, waiting):
        shut.shutdown()
    with pytest.raises(QueueShutDown):
        queue.put_nowait(2)
    assert queue.get_nowait() == 1
    with pytest.raises(QueueShutDown):
        queue.get_nowait()
    with pytest.raises(QueueShutDown):
        await asyncio.wait_for(getter, 1)


async def test_a_cancelled_join_leaves_nothing_behind_and_others_still_return() -> None:
    queue = LoopQueue[int]()
    queue.put_nowait(1)
    cancelled, waiting = asyncio.create_task(queue.join()), asyncio.create_task(queue.join())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    assert len(queue._joiners) == 1
    queue.get_nowait()
    queue.task_done()
    await asyncio.wait_for(waiting, 1)
    assert not queue._joiners
