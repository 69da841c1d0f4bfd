"""On shared state: the tasks a dead replica left unfinished are failed by the live ones, whether or not anyone
sends to their context again.

Every live replica looks every third of `state.lease` for leases their replica stopped renewing (leases.py) and
fails the unfinished tasks of those contexts with a sentence naming that replica (recovery.py), then deletes the
lease. A task is thus failed within the lease and a third after its replica died. Replicas sweeping at once do no
harm: each failure is a versioned write, and the second finds the task changed and leaves it. A task still
`submitted` is left until it is a lease old: a live replica may be about to take that context over for it.

Leases expire for the living too when the database was out for a lease: a replica that could not reach it
sweeps again only a lease after its last failure, so that the others have renewed theirs by then. Its own
leases it never sweeps: what runs here, it knows (a restart under the same name is agent_tasks's at the start).
"""

import asyncio
import logging
import time

from a2a.server.cluster import VersionedTaskStore
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.leases import expired_leases, forget
from a2a_wrapper.state.outage import unreachable
from a2a_wrapper.state.recovery import fail_orphaned_tasks, lost_with, unfinished
from a2a_wrapper.state.sdk_tables import tasks_of_context

log = logging.getLogger(__name__)


class OrphanSweep:
    def __init__(self, engine: AsyncEngine, store: VersionedTaskStore, lease: float, replica: str) -> None:
        self._engine = engine
        self._store = store
        self._lease = lease
        self._replica = replica  # this one's name in the leases

    async def run(self) -> None:
        """Until cancelled: a sweep every third of the lease, none for a lease after one failed."""
        while True:
            await asyncio.sleep(self._lease / 3)
            try:
                await self.sweep()
            except Exception as exc:  # a boundary: a later sweep tries again (the database may be back by then)
                if unreachable(exc):  # an outage: said once, where it is watched (outage.py)
                    log.debug("no sweep of expired leases: the state database is out of reach")
                else:
                    log.exception("could not sweep the tasks of expired leases; the next sweep is in %g s", self._lease)
                await asyncio.sleep(self._lease)

    async def sweep(self) -> int:
        """Fails the unfinished tasks of every expired lease's context (another replica's); returns how many."""
        failed = 0
        for lease in await expired_leases(self._engine):
            if lease.replica == self._replica:
                continue
            key = lease.key
            tasks = await tasks_of_context(self._engine, key.caller, key.context_id)
            submitted_before = time.time() - self._lease
            failed += await fail_orphaned_tasks(self._store, tasks, submitted_before, lost_with(lease.replica))
            if not any(map(unfinished, await tasks_of_context(self._engine, key.caller, key.context_id))):
                await forget(self._engine, lease)
        return failed
