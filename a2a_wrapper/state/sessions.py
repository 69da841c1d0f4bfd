"""(caller, contextId) → backend session, kept in the agent's state database: resumed, recreated, expired, and when
last used. Which contexts have a turn running is the front end's (`busy`); expiry leaves those alone."""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Select, exists, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.config.settings import SessionSettings
from a2a_wrapper.errors import BackendError
from a2a_wrapper.state import schema
from a2a_wrapper.state.database import writing
from a2a_wrapper.state.engines import is_shared
from a2a_wrapper.state.migrations import migrate

log = logging.getLogger(__name__)

_SESSIONS = schema.context_sessions
_LEASES = schema.context_leases
_ENDABLE = select(_SESSIONS.c.caller, _SESSIONS.c.context_id, _SESSIONS.c.session_id)
_LEASED = (_LEASES.c.caller == _SESSIONS.c.caller, _LEASES.c.context_id == _SESSIONS.c.context_id)


@dataclass(frozen=True, slots=True)
class ContextKey:
    """A context as its caller sees it: the same contextId sent by two callers names two conversations."""

    caller: str  # the authenticated A2A caller; "" without auth
    context_id: str

    @property
    def backend_key(self) -> str:
        """What the backend is told; Copilot derives its session id from it, so no two contexts may share one.
        A caller's name holds no "/", so the first "/" always ends it (the anonymous caller's key starts with it);
        the session of an existing row is resumed by its stored id whatever this key was when it was made."""
        return f"{self.caller}/{self.context_id}"


def caller_of_key(backend_key: str) -> str:
    """The caller a `ContextKey.backend_key` belongs to: what comes before its first "/"."""
    return backend_key.partition("/")[0]


class OpenedSession(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def created(self) -> bool: ...


class SessionBackend(Protocol):
    """What the session map asks of a backend (a part of the Backend contract)."""

    @property
    def kind(self) -> str: ...

    async def open_session(
        self, context_key: str, resume: str | None = None, directory: Path | None = None
    ) -> OpenedSession: ...

    async def close_session(self, session_id: str) -> None: ...


class ContextFolders(Protocol):
    """Each context's own folder (workspaces/): made or found when its session opens, removed when it ends."""

    async def open(self, key: ContextKey) -> Path: ...

    async def remove(self, key: ContextKey) -> None: ...


@dataclass(frozen=True, slots=True)
class ContextSession:
    id: str  # the backend's session id
    created: bool  # False when an existing backend session was resumed
    recreated: bool  # the map had a session the backend no longer has
    directory: Path | None = None  # the context's own workspace; None: the backend's workdir


class SessionMap:
    def __init__(
        self,
        engine: AsyncEngine,
        backend: SessionBackend,
        settings: SessionSettings,
        busy: Callable[[ContextKey], bool],
        lease: Callable[[ContextKey], Awaitable[None]] | None = None,
        folders: ContextFolders | None = None,
    ) -> None:
        self._engine = engine
        self._folders = folders  # per-task workspaces: a context's session works in its own folder
        self._lease = lease  # shared state: takes the context for this replica or raises (leases.py)
        self._backend = backend
        self._settings = settings
        self._busy = busy  # whether a context has a turn running (or paused): its session is never ended then
        self._known: dict[ContextKey, str] = {}  # context -> session id, as in the database
        # Shared state: another replica may give a context a new session between two turns here, so the map is
        # read at each turn; a session id this backend confirmed is still trusted (ids are the backend's own).
        self._shared = is_shared(engine)
        self._verified: set[str] = set()  # session ids the backend confirmed in this process
        self._last_used: dict[ContextKey, float] = {}  # not yet written

    async def initialize(self) -> None:
        """The state's schema, brought up to date (migrations.py)."""
        await migrate(self._engine)

    def ready(self, key: ContextKey) -> bool:
        """Whether `session_for` answers at once, from this process's memory: the context's session was checked
        here (never on shared state, where each turn reads the database and takes the context's lease)."""
        return self._lease is None and not self._shared and self._known.get(key) in self._verified

    async def session_for(self, key: ContextKey) -> ContextSession:
        """The context's backend session: resumed, recreated if the backend lost it, or new.

        A session checked once with the backend in this process is trusted afterwards (one request per
        turn to the backend); if the backend has lost it since, the turn reports `SessionGone` and the
        caller `forget`s it and asks again.
        """
        if self._lease is not None:
            await self._lease(key)
        known = (None if self._shared else self._known.get(key)) or await self._lookup(key)
        directory = await self._folders.open(key) if self._folders is not None else None
        if known is not None and known in self._verified:
            self._last_used[key] = time.time()
            return ContextSession(known, created=False, recreated=False, directory=directory)
        if directory is None:
            session = await self._backend.open_session(key.backend_key, resume=known)
        else:
            session = await self._backend.open_session(key.backend_key, resume=known, directory=directory)
        await self._remember(key, session.id)
        if known is None:
            await self._evict_over_limit()
        recreated = known is not None and session.created
        return ContextSession(session.id, session.created, recreated=recreated, directory=directory)

    async def known_sessions(self) -> set[str]:
        async with self._engine.connect() as db:
            rows = await db.execute(
                text("SELECT session_id FROM context_sessions WHERE backend = :b"), {"b": self._backend.kind}
            )
            return {str(row[0]) for row in rows}

    def forget(self, key: ContextKey) -> None:
        """The backend no longer has this context's session: check it again on the next turn."""
        session_id = self._known.get(key)
        self._verified.discard(session_id or "")

    async def _remember(self, key: ContextKey, session_id: str) -> None:
        now = time.time()
        async with writing(self._engine) as db:
            await db.execute(
                text(
                    "INSERT INTO context_sessions (caller, context_id, backend, session_id, created_at, last_used)"
                    " VALUES (:a, :c, :b, :s, :t, :t) ON CONFLICT(caller, context_id)"
                    " DO UPDATE SET session_id = :s, last_used = :t"
                ),
                {"a": key.caller, "c": key.context_id, "b": self._backend.kind, "s": session_id, "t": now},
            )
        self._known[key] = session_id
        self._verified.add(session_id)
        self._last_used[key] = now

    async def _lookup(self, key: ContextKey) -> str | None:
        async with self._engine.connect() as db:
            row = await db.execute(
                text("SELECT session_id FROM context_sessions WHERE caller = :a AND context_id = :c AND backend = :b"),
                {"a": key.caller, "c": key.context_id, "b": self._backend.kind},
            )
            found = row.scalar_one_or_none()
        if found is None:
            return None
        self._known[key] = str(found)
        return str(found)

    async def save_last_used(self) -> None:
        """Writes the in-memory use times (kept off the turn's path) to the database."""
        used, self._last_used = self._last_used, {}
        if not used:
            return
        try:
            async with writing(self._engine) as db:
                await db.execute(
                    text(
                        "UPDATE context_sessions SET last_used = :t"
                        " WHERE caller = :a AND context_id = :c AND last_used < :t"
                    ),
                    [{"a": key.caller, "c": key.context_id, "t": t} for key, t in used.items()],
                )
        except (OperationalError, OSError) as exc:  # a full disk, a database out of reach: only expiry's hint is lost
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            log.error("could not save when %d context(s) were last used: %s", len(used), reason)

    async def expire(self) -> int:
        """Ends sessions idle longer than the TTL (0: never); returns how many ended."""
        await self.save_last_used()
        if not self._settings.ttl:
            return 0
        cutoff = time.time() - self._settings.ttl
        return await self._end(_ENDABLE.where(_SESSIONS.c.last_used < cutoff))

    async def _evict_over_limit(self) -> None:
        await self.save_last_used()
        await self._end(_ENDABLE.order_by(_SESSIONS.c.last_used.desc()).offset(self._settings.max_count))

    async def _end(self, query: Select[Any]) -> int:
        """Ends the sessions `query` selects (as caller, context id, session id); returns how many ended."""
        if self._shared:  # a context another replica runs is busy there: its lease is live
            query = query.where(~exists().where(*_LEASED, _LEASES.c.expires_at > time.time()))
        async with self._engine.connect() as db:
            rows = [(ContextKey(r[0], r[1]), str(r[2])) for r in await db.execute(query)]
        ended = 0
        for key, session_id in rows:
            if self._busy(key):
                continue  # never end a session mid-turn
            try:
                await self._backend.close_session(session_id)
            except BackendError as exc:
                log.warning("could not delete backend session %s: %s", session_id, exc)
            async with writing(self._engine) as db:
                await db.execute(
                    text("DELETE FROM context_sessions WHERE caller = :a AND context_id = :c"),
                    {"a": key.caller, "c": key.context_id},
                )
            self._verified.discard(self._known.pop(key, ""))
            if self._folders is not None:
                await self._folders.remove(key)
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
