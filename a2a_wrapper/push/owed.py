"""At start: the ends a previous run owed its webhooks, pushed.

A task's configs are dropped once its end has been pushed (delivery.py), so a config on an ended task means its
end never went out: the run stopped before the push did, or start-up recovery (state/recovery.py) has just failed
the task whose turn died with that run. Each such end goes out as a normal end would — the task's final status as
a `statusUpdate`, then its configs dropped.
"""

import logging

from a2a.server.tasks import TaskStore
from a2a.types import TaskState, TaskStatusUpdateEvent
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.push.delivery import ENDS, PushDelivery
from a2a_wrapper.state.recovery import as_owner
from a2a_wrapper.state.sdk_tables import tasks_with_push_configs

log = logging.getLogger(__name__)

_ENDED = {TaskState.Name(state) for state in ENDS}


async def push_owed_ends(engine: AsyncEngine, tasks: TaskStore, delivery: PushDelivery) -> int:
    """Queues the end of every ended task that still has configs; returns how many."""
    owed = 0
    for stored in await tasks_with_push_configs(engine):
        if stored.state not in _ENDED:
            continue
        task = await tasks.get(stored.id, as_owner(stored.owner))
        if task is None:
            continue
        end = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)
        await delivery.send_notification(task.id, end)
        owed += 1
    if owed:
        log.info("pushing the end of %d task(s) the last run did not push", owed)
    return owed
