"""a2a-sdk's task queues on the agent's LoopQueue (loop_queue.py), not on culsans nor asyncio's Queue.

a2a-sdk 1.3.0 makes every queue of a running task (its requests, its incoming events, each subscriber's sink)
with `create_async_queue`: asyncio.Queue from Python 3.13, which has `shutdown`; before that, the async side of a
culsans queue, which is thread-safe, built on aiologic's locks, and the SDK's dearest part: a five-event
stream cost the SDK's handler 2.4 ms of CPU on culsans and 1.65 ms on asyncio's Queue (Python 3.11). Neither the
SDK nor this agent touches those queues off the event loop, so here they are LoopQueues: asyncio.Queue's semantics
with 3.13's `shutdown`, in fewer calls, raising the `QueueShutDown` that the SDK's `except` clauses name.
"""

from typing import Any, TypeVar

from a2a.server.agent_execution import active_task
from a2a.server.events import event_queue, event_queue_v2
from a2a.utils import _async_queue_compat

from a2a_wrapper.loop_queue import LoopQueue

Item = TypeVar("Item")

# every module that took `create_async_queue` by name (a2a-sdk 1.3.0; tests/test_sdk_queues.py checks the rest)
SDK_MODULES = (_async_queue_compat, event_queue, event_queue_v2, active_task)


class SdkQueue(LoopQueue[Item]):
    """A LoopQueue whose shutdown raises the `QueueShutDown` that the SDK's `except` clauses name."""

    shut_down = _async_queue_compat.QueueShutDown


def sdk_queue(maxsize: int = 0) -> SdkQueue[Any]:
    return SdkQueue(maxsize=maxsize)


def use_loop_queues() -> None:
    """From now on the SDK's queues are SdkQueues, on every Python (3.13's asyncio.Queue has `shutdown`, but spends
    the same calls as before on each put and get)."""
    for module in SDK_MODULES:
        module.create_async_queue = sdk_queue  # type: ignore[attr-defined]
