"""The shared state database (PostgreSQL) out of reach: told apart from other errors, said once per outage, waited
out for work under way, refused at once for new work.

A write a running turn needs (its task's next state) waits for the database up to `state.outage_wait` seconds
from the outage's start, so a short outage costs a pause, not a turn; past that the write fails with
`StateUnavailable`, whose sentence names the database (its password masked). Anything new (a message's claim, a
read) fails at once with that sentence: nothing is half made while nothing can be kept. While the database is
out, one loop (`run`) tries it every PROBE_EVERY seconds; when it answers, the log says so, waiting writes go on,
and what the outage owes (tasks failed meanwhile, shared_tasks.py) is written.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from a2a.utils.errors import InternalError
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)

Result = TypeVar("Result")

PROBE_EVERY = 0.5  # seconds between tries of an unreachable database
# PostgreSQL's codes for a server going or not there yet: admin shutdown, crash shutdown, cannot connect now
_SERVER_GONE = {"57P01", "57P02", "57P03"}


class StateUnavailable(InternalError):
    """The agent's state cannot be kept: its database is out of reach, or its SQLite file refuses writes (a full
    disk: task_store.py). The message is the sentence for the caller (JSON-RPC -32603, REST 500, gRPC INTERNAL,
    on every binding, with no traceback)."""


def unreachable(exc: BaseException) -> bool:
    """Whether `exc` says the database server is out of reach (refused, cut, shutting down, starting), not that it
    refused a statement."""
    if isinstance(exc, OSError):  # refused, reset, timed out, host unknown: asyncpg raises them untranslated
        return True
    if not isinstance(exc, DBAPIError):
        return False
    code = getattr(exc.orig, "sqlstate", None)
    return exc.connection_invalidated or (isinstance(code, str) and (code.startswith("08") or code in _SERVER_GONE))


def _reason(exc: BaseException) -> str:
    """The driver's own words, short: "connection refused", "the database system is shutting down"."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    cause = exc.orig if isinstance(exc, DBAPIError) else exc
    return str(cause).splitlines()[0] if str(cause) else type(cause).__name__


class StateOutage:
    """One agent's state database's reachability. `database` is how it is named (the URL, password masked)."""

    def __init__(self, engine: AsyncEngine, database: str, wait: float) -> None:
        self._engine = engine
        self._database = database
        self._wait = wait
        self._since: float | None = None  # monotonic start of the current outage
        self._reason = ""
        self._down = asyncio.Event()
        self._back = asyncio.Event()
        self._back.set()

    @property
    def down(self) -> bool:
        return self._since is not None

    def sentence(self) -> str:
        return f"The agent's state database {self._database} cannot be reached ({self._reason})"

    async def held(self, write: Callable[[], Awaitable[Result]]) -> Result:
        """`write()`, retried while the database is unreachable, until `wait` seconds after the outage began."""
        while True:
            try:
                result = await write()
            except Exception as exc:
                if not unreachable(exc):
                    raise
                since = self._failed(exc)
                left = since + self._wait - time.monotonic()
                try:
                    async with asyncio.timeout(max(0.0, left)):
                        await self._back.wait()
                except TimeoutError:
                    raise StateUnavailable(
                        f"{self.sentence()} for {self._wait:g} s: this task's progress could not be saved, so its "
                        "turn was stopped. Send the message again once the database is back."
                    ) from exc
                continue
            self._reached()
            return result

    async def refused(self, action: Callable[[], Awaitable[Result]]) -> Result:
        """`action()`; an unreachable database fails it at once with the sentence."""
        try:
            result = await action()
        except Exception as exc:
            if not unreachable(exc):
                raise
            self._failed(exc)
            raise StateUnavailable(
                f"{self.sentence()}: nothing was run or stored. Send the message again once the database is back."
            ) from exc
        self._reached()
        return result

    async def run(self, mend: Callable[[], Awaitable[None]]) -> None:
        """Until cancelled: while the database is out, tries it; once it answers, `mend()` writes what is owed."""
        while True:
            await self._down.wait()
            while self.down:
                try:
                    async with self._engine.connect() as db:
                        await db.execute(text("SELECT 1"))
                except Exception as exc:
                    if not unreachable(exc):
                        log.exception("the state database %s answered the probe with an error", self._database)
                    await asyncio.sleep(PROBE_EVERY)  # a server coming back sends no event: it is tried again
                else:
                    self._reached()
            await mend()

    def _failed(self, exc: BaseException) -> float:
        if self._since is None:
            self._since, self._reason = time.monotonic(), _reason(exc)
            self._back.clear()
            self._down.set()
            log.warning(
                "state database %s unreachable (%s): running turns wait up to %g s for it; new messages are refused",
                self._database,
                self._reason,
                self._wait,
            )
        return self._since

    def _reached(self) -> None:
        if self._since is None:
            return
        log.warning("state database %s reachable again after %.1f s", self._database, time.monotonic() - self._since)
        self._since = None
        self._down.clear()
        self._back.set()
