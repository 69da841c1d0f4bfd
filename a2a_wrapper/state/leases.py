"""Which replica runs a context: a lease in the shared database, so one context never runs on two backends at once.

A turn takes its context's lease before it opens the backend session (sessions.py); the replica renews the
leases of its live turns (a turn paused for a person is live) every third of `state.lease`, and lets a lease go
when the context's last turn here ends. A message for a context whose lease another replica holds, unexpired,
is refused with a sentence naming that replica and when its lease ends. A replica that dies stops renewing:
after the lease its contexts are free, and the tasks it left unfinished are failed by whichever live replica
comes first: the one that takes a context over, or the sweep every live replica runs (orphans.py), whether
or not anyone sends to the context again. The replica that takes a context over then resumes the context's
session if its backend can, or recreates it. A replica that starts again under its old name (a fixed
`state.replica`, or HOSTNAME-PID in a container restarted in place) holds nothing yet: the leases in its name
are its dead predecessor's (`release_all` at its start, after the tasks of their contexts were failed).

On SQLite (one process owns the file) there are no leases: the front end's context locks suffice.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import Executable, delete, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.errors import BackendError
from a2a_wrapper.state import schema
from a2a_wrapper.state.outage import StateOutage, StateUnavailable
from a2a_wrapper.state.sessions import ContextKey

log = logging.getLogger(__name__)

_LEASES = schema.context_leases


class ContextHeldElsewhere(BackendError):
    """Another live replica runs the context; the message names it and when its lease ends."""

    def __init__(self, key: ContextKey, replica: str, url: str, expires_at: float) -> None:
        left = max(0.0, expires_at - time.time())
        super().__init__(
            f"context {key.context_id} is running on replica {replica} ({url}), whose lease on it ends in "
            f"{left:.0f} s unless its turn goes on; send the message there, or again once that turn has ended"
        )
        self.replica = replica


@dataclass(frozen=True, slots=True)
class Replica:
    name: str
    url: str  # its advertised URL, named to callers it refuses


@dataclass(frozen=True, slots=True)
class Lease:
    key: ContextKey
    replica: str
    expires_at: float


async def leased_contexts(engine: AsyncEngine, other_than: str) -> set[ContextKey]:
    """The contexts a replica other than `other_than` holds, unexpired."""
    async with engine.connect() as db:
        rows = await db.execute(
            select(_LEASES.c.caller, _LEASES.c.context_id).where(
                _LEASES.c.expires_at > time.time(), _LEASES.c.replica != other_than
            )
        )
        return {ContextKey(caller, context_id) for caller, context_id in rows}


async def expired_leases(engine: AsyncEngine) -> list[Lease]:
    """The leases their replica stopped renewing: it died, or lost the database for a whole lease."""
    async with engine.connect() as db:
        rows = await db.execute(select(_LEASES).where(_LEASES.c.expires_at <= time.time()))
        return [Lease(ContextKey(row.caller, row.context_id), row.replica, row.expires_at) for row in rows]


async def forget(engine: AsyncEngine, lease: Lease) -> None:
    """Deletes an expired lease, unless a replica has taken the context since (the row changed)."""
    async with engine.begin() as db:
        await db.execute(
            delete(_LEASES).where(
                _LEASES.c.caller == lease.key.caller,
                _LEASES.c.context_id == lease.key.context_id,
                _LEASES.c.replica == lease.replica,
                _LEASES.c.expires_at == lease.expires_at,
            )
        )


async def release_all(engine: AsyncEngine, replica: str) -> None:
    """Lets go of every lease held in `replica`'s name."""
    async with engine.begin() as db:
        await db.execute(delete(_LEASES).where(_LEASES.c.replica == replica))


class ContextLeases:
    def __init__(
        self,
        engine: AsyncEngine,
        replica: Replica,
        lease: float,
        busy: Callable[[ContextKey], bool],
        taken_over: Callable[[ContextKey, str], Awaitable[object]],
        outage: StateOutage | None = None,
    ) -> None:
        """`outage` says the database's outages once: a renewal that finds it out of reach adds nothing."""
        self._engine = engine
        self._outage = outage
        self._replica = replica
        self._lease = lease
        self._busy = busy  # whether a turn of the context is live here
        self._taken_over = taken_over  # called with a context taken from a replica whose lease had expired, and it
        self._held: set[ContextKey] = set()
        self._released: asyncio.Queue[ContextKey] = asyncio.Queue()

    async def take(self, key: ContextKey) -> None:
        """Holds the context's lease for this replica, or raises `ContextHeldElsewhere`."""
        now = time.time()
        mine = {"replica": self._replica.name, "url": self._replica.url, "expires_at": now + self._lease}
        where = (_LEASES.c.caller == key.caller, _LEASES.c.context_id == key.context_id)
        async with self._engine.begin() as db:
            fresh = insert(_LEASES).values(caller=key.caller, context_id=key.context_id, **mine)
            if (await db.execute(fresh.on_conflict_do_nothing().returning(_LEASES.c.replica))).first():
                self._held.add(key)
                return
            holder = (await db.execute(select(_LEASES).where(*where).with_for_update())).one()
            if holder.replica != self._replica.name and holder.expires_at > now:
                raise ContextHeldElsewhere(key, holder.replica, holder.url, holder.expires_at)
            await db.execute(update(_LEASES).where(*where).values(**mine))
        self._held.add(key)
        if holder.replica != self._replica.name:
            log.warning(
                "context %s: took it over from replica %s, whose lease had expired", key.context_id, holder.replica
            )
            await self._taken_over(key, holder.replica)

    def release(self, key: ContextKey) -> None:
        """The context's last turn here has ended: its lease goes (at once, by the renewing loop)."""
        if key in self._held:
            self._released.put_nowait(key)

    async def run(self) -> None:
        """Until cancelled: renews the leases of live turns, and lets go of the ones released."""
        interval = self._lease / 3
        renew_at = time.monotonic() + interval
        while True:
            try:
                async with asyncio.timeout(max(0.0, renew_at - time.monotonic())):
                    key = await self._released.get()
                if not self._busy(key):  # no turn of it started here again meanwhile
                    await self._drop(key)
            except TimeoutError:
                renew_at = time.monotonic() + interval
                await self._renew()
            except StateUnavailable:
                pass  # said once by the outage; a lease not renewed meanwhile expires (fail closed)
            except Exception:  # a boundary: the loop must go on; an unrenewed lease fails closed (it expires)
                log.exception("could not renew or release context leases")

    async def close(self) -> None:
        """Lets go of every lease this replica holds (at a stop: the contexts may run elsewhere at once)."""
        await release_all(self._engine, self._replica.name)
        self._held.clear()

    async def _renew(self) -> None:
        for key in [key for key in self._held if not self._busy(key)]:
            await self._drop(key)  # its release was missed: no turn of it is live here
        if not self._held:
            return
        mine = _LEASES.c.replica == self._replica.name
        await self._write(update(_LEASES).where(mine).values(expires_at=time.time() + self._lease))

    async def _drop(self, key: ContextKey) -> None:
        self._held.discard(key)
        await self._write(
            delete(_LEASES).where(
                _LEASES.c.caller == key.caller,
                _LEASES.c.context_id == key.context_id,
                _LEASES.c.replica == self._replica.name,
            )
        )

    async def _write(self, statement: Executable) -> None:
        """One statement in a transaction; refused at once with the outage's sentence while the database is out."""

        async def written() -> None:
            async with self._engine.begin() as db:
                await db.execute(statement)

        await (self._outage.refused(written) if self._outage is not None else written())
