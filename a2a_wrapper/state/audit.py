"""Every permission decision, recorded in the agent's state database: who, what, which rule, when. No message content.

A decision's target is a command, a path or a URL, which may carry a credential (`curl -H "Authorization: …"`):
every entry is redacted by the guard as it is written, whoever writes it.

An entry that cannot be written (a full disk, a database out of reach) raises `AuditUnavailable`, whose sentence
names the audit's place and the reason; the log says so once, until an entry is written again. What a decision
without its entry may still do is its decider's call (sandbox/boundary.py, permissions/gate.py).
"""

import asyncio
import logging
import sqlite3
from dataclasses import astuple, dataclass
from pathlib import Path

from sqlalchemy import insert, inspect, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from a2a_wrapper.errors import WrapperError
from a2a_wrapper.guard import redact_value
from a2a_wrapper.state import schema
from a2a_wrapper.state.database import writing
from a2a_wrapper.state.engines import StateDatabase
from a2a_wrapper.state.migrations import migrate

log = logging.getLogger(__name__)

UNAUDITED = "audit:unwritable"  # the rule of an allow refused because its entry could not be written


class AuditUnavailable(WrapperError):
    """An audit entry could not be written; the message names where and why."""


@dataclass(frozen=True, slots=True)
class AuditEntry:
    time: float
    agent: str
    context_id: str
    task_id: str
    caller: str  # the authenticated A2A caller, "" when auth is off
    tool: str
    cls: str
    target: str  # the command, paths or URL the decision was about
    decision: str
    rule: str
    decided_by: str  # "rules", "deadline", "sandbox", or the person who answered
    wait_ms: float  # how long the decision took, a person's answer included


class AuditLog:
    def __init__(self, engine: AsyncEngine, where: str = "the agent's state database") -> None:
        """`where` names the audit's place in the sentence of a write that failed (the file, the URL masked)."""
        self._engine = engine
        self._where = where
        self._failing = False  # said once, until an entry is written again

    async def initialize(self) -> None:
        """The state's schema, brought up to date (migrations.py)."""
        await migrate(self._engine)

    async def record(self, entry: AuditEntry) -> None:
        values = redact_value(astuple(entry))
        try:
            async with writing(self._engine) as db:
                await db.execute(insert(schema.audit).values(dict(zip(schema.audit.c.keys(), values, strict=True))))
        except (SQLAlchemyError, OSError) as exc:
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            sentence = f"the audit log in {self._where} cannot be written ({reason})"
            if not self._failing:
                self._failing = True
                log.error("%s: decisions that need their entry are refused until it can be", sentence)
            raise AuditUnavailable(sentence) from exc
        if self._failing:
            self._failing = False
            log.warning("the audit log in %s is written again", self._where)


def recent(
    database: Path | StateDatabase, limit: int, decision: str | None = None, caller: str | None = None
) -> list[AuditEntry]:
    """The newest entries first, of one decision and one caller when given, read on a connection of its own,
    whether the agent runs or not (for `a2a-wrap audit`, and the operator endpoint off the loop)."""
    filters = {name: value for name, value in (("decision", decision), ("caller", caller)) if value is not None}
    if isinstance(database, StateDatabase) and database.url is not None:
        return asyncio.run(_recent_on_server(database, limit, filters))
    path = database.path if isinstance(database, StateDatabase) else database
    if path is None or not path.exists():
        return []
    where = " AND ".join(f"{name} = :{name}" for name in filters)
    query = f"SELECT * FROM audit {'WHERE ' + where if where else ''} ORDER BY time DESC LIMIT :limit"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        try:
            rows = db.execute(query, {**filters, "limit": limit}).fetchall()
        except sqlite3.OperationalError:  # no decision recorded yet: the table does not exist
            return []
    return [AuditEntry(*row) for row in rows]


async def _recent_on_server(database: StateDatabase, limit: int, filters: dict[str, str]) -> list[AuditEntry]:
    """`recent` on PostgreSQL, on an engine of its own (this runs on a loop of its own, in the caller's thread)."""
    table = schema.audit
    query = select(table).where(*(table.c[name] == value for name, value in filters.items()))
    engine = create_async_engine(database.engine_url(), poolclass=NullPool)
    try:
        async with engine.connect() as db:
            if not await db.run_sync(lambda sync: inspect(sync).has_table(table.name)):
                return []  # an agent never started on this database
            rows = (await db.execute(query.order_by(table.c.time.desc()).limit(limit))).all()
    finally:
        await engine.dispose()
    return [AuditEntry(*row) for row in rows]
