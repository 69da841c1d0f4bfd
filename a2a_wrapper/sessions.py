"""contextId → backend session, kept in the agent's SQLite file; one turn at a time per context."""

import asyncio
import logging
import time
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.backends.base import Backend, Session
from a2a_wrapper.config import SessionSettings
from a2a_wrapper.errors import BackendError

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS context_sessions (
    context_id TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    session_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_used REAL NOT NULL
)"""


@dataclass(frozen=True, slots=True)
class ContextSession:
    session: Session
    recreated: bool  # the map had a session the backend no longer has


class SessionMap:
    def __init__(self, engine: AsyncEngine, backend: Backend, settings: SessionSettings) -> None:
        self._engine = engine
        self._backend = backend
        self._settings = settings
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiters: dict[str, int] = {}
        self._known: dict[str, str] = {}  # context -> session id, as in the database
        self._verified: set[str] = set()  # session ids the backend confirmed in this process
        self._last_used: dict[str, float] = {}  # not yet written

    async def initialize(self) -> None:
        async with self._engine.begin() as db:
            await db.execute(text(_SCHEMA))

    async def acquire(self, context_id: str) -> None:
        """Serialises turns of one context: a second message waits until the running turn calls `release`
        (which may be in a later request, when the turn paused for a person)."""
        lock = self._locks.setdefault(context_id, asyncio.Lock())
        self._waiters[context_id] = self._waiters.get(context_id, 0) + 1
        try:
            await lock.acquire()
        except BaseException:
            self._leave(context_id)
            raise

    def release(self, context_id: str) -> None:
        self._locks[context_id].release()
        self._leave(context_id)

    def _leave(self, context_id: str) -> None:
        self._waiters[context_id] -= 1
        if not self._waiters[context_id]:
            del self._waiters[context_id], self._locks[context_id]

    def busy(self, context_id: str) -> bool:
        return context_id in self._locks

    async def session_for(self, context_id: str) -> ContextSession:
        """The context's backend session: resumed, recreated if the backend lost it, or new.

        A session checked once with the backend in this process is trusted afterwards (one request per
        turn to the backend); if the backend has lost it since, the turn reports `SessionGone` and the
        caller `forget`s it and asks again.
        """
        known = self._known.get(context_id) or await self._lookup(context_id)
        if known is not None and known in self._verified:
            self._last_used[context_id] = time.time()
            return ContextSession(Session(known, created=False), recreated=False)
        session = await self._backend.open_session(context_id, resume=known)
        await self._remember(context_id, session.id)
        if known is None:
            await self._evict_over_limit()
        return ContextSession(session, recreated=known is not None and session.created)

    async def known_sessions(self) -> set[str]:
        async with self._engine.connect() as db:
            rows = await db.execute(
                text("SELECT session_id FROM context_sessions WHERE backend = :b"), {"b": self._backend.kind}
            )
            return {str(row[0]) for row in rows}

    def forget(self, context_id: str) -> None:
        """The backend no longer has this context's session: check it again on the next turn."""
        session_id = self._known.get(context_id)
        self._verified.discard(session_id or "")

    async def _remember(self, context_id: str, session_id: str) -> None:
        now = time.time()
        async with self._engine.begin() as db:
            await db.execute(
                text(
                    "INSERT INTO context_sessions VALUES (:c, :b, :s, :t, :t) ON CONFLICT(context_id) "
                    "DO UPDATE SET session_id = :s, last_used = :t"
                ),
                {"c": context_id, "b": self._backend.kind, "s": session_id, "t": now},
            )
        self._known[context_id] = session_id
        self._verified.add(session_id)
        self._last_used[context_id] = now

    async def _lookup(self, context_id: str) -> str | None:
        async with self._engine.connect() as db:
            row = await db.execute(
                text("SELECT session_id FROM context_sessions WHERE context_id = :c AND backend = :b"),
                {"c": context_id, "b": self._backend.kind},
            )
            found = row.scalar_one_or_none()
        if found is None:
            return None
        self._known[context_id] = str(found)
        return str(found)

    async def save_last_used(self) -> None:
        """Writes the in-memory use times (kept off the turn's path) to the database."""
        used, self._last_used = self._last_used, {}
        if not used:
            return
        async with self._engine.begin() as db:
            await db.execute(
                text("UPDATE context_sessions SET last_used = :t WHERE context_id = :c AND last_used < :t"),
                [{"c": c, "t": t} for c, t in used.items()],
            )

    async def expire(self) -> int:
        """Ends sessions idle longer than the TTL (0: never); returns how many ended."""
        await self.save_last_used()
        if not self._settings.ttl:
            return 0
        cutoff = time.time() - self._settings.ttl
        async with self._engine.connect() as db:
            rows = await db.execute(
                text("SELECT context_id, session_id FROM context_sessions WHERE last_used < :t"), {"t": cutoff}
            )
            stale = [(r[0], r[1]) for r in rows]
        return await self._end(stale)

    async def _evict_over_limit(self) -> None:
        await self.save_last_used()
        async with self._engine.connect() as db:
            rows = await db.execute(
                text("SELECT context_id, session_id FROM context_sessions ORDER BY last_used DESC LIMIT -1 OFFSET :n"),
                {"n": self._settings.max_count},
            )
            extra = [(r[0], r[1]) for r in rows]
        await self._end(extra)

    async def _end(self, rows: list[tuple[str, str]]) -> int:
        ended = 0
        for context_id, session_id in rows:
            if self.busy(context_id):
                continue  # never end a session mid-turn
            try:
                await self._backend.close_session(session_id)
            except BackendError as exc:
                log.warning("could not delete backend session %s: %s", session_id, exc)
            async with self._engine.begin() as db:
                await db.execute(text("DELETE FROM context_sessions WHERE context_id = :c"), {"c": context_id})
            self._verified.discard(self._known.pop(context_id, ""))
            ended += 1
        return ended

    async def run_expiry(self) -> None:
        """Sweeps expired sessions (and writes use times) until cancelled."""
        interval = max(1.0, min(self._settings.ttl / 4, 60.0)) if self._settings.ttl else 60.0
        while True:
            await asyncio.sleep(interval)
            try:
                ended = await self.expire()
            except BackendError as exc:
                log.warning("session expiry failed: %s", exc)
                continue
            if ended:
                log.info("ended %d idle sessions", ended)
