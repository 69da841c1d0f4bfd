"""On shared state: the tasks a dead replica left unfinished are failed by the live ones, whether or not anyone
sends to their context again.

Every live replica looks every third of `state.lease` for leases their replica stopped renewing (leases.py) and
fails the unfinished tasks of those contexts with a sentence naming that replica (recovery.py), then deletes the
lease. A task is thus failed within the lease and a third after its replica died. Replicas sweeping at once do no
harm: each failure is a versioned write, and the second finds the task changed and leaves it. A task still
`submitted` is left until it is a lease old: a live replica may be about to take that context over for it.
"""

import asyncio
import logging
import time

from a2a.server.cluster import VersionedTaskStore
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.leases import expired_leases, forget
from a2a_wrapper.state.recovery import fail_orphaned_tasks, lost_with, unfinished
from a2a_wrapper.state.sdk_tables import tasks_of_context

log = logging.getLogger(__name__)


class OrphanSweep:
    def __init__(self, engine: AsyncEngine, store: VersionedTaskStore, lease: float) -> None:
        self._engine = engine
        self._store = store
        self._lease = lease

    async def run(self) -> None:
        """Until cancelled: a sweep every third of the lease."""
        while True:
            await asyncio.sleep(self._lease / 3)
            try:
                await self.sweep()
            except Exception:  # a boundary: the next sweep tries again (the database may be back by then)
                log.exception("could not sweep the tasks of expired leases")

    async def sweep(self) -> int:
        """Fails the unfinished tasks of every expired lease's context; returns how many."""
        failed = 0
        for lease in await expired_leases(self._engine):
            key = lease.key
            tasks = await tasks_of_context(self._engine, key.caller, key.context_id)
            submitted_before = time.time() - self._lease
            failed += await fail_orphaned_tasks(self._store, tasks, submitted_before, lost_with(lease.replica))
            if not any(map(unfinished, await tasks_of_context(self._engine, key.caller, key.context_id))):
                await forget(self._engine, lease)
        return failed
