"""Every permission decision, recorded in the agent's SQLite file: who, what, which rule, when. No message content.

A decision's target is a command, a path or a URL, which may carry a credential (`curl -H "Authorization: …"`):
every entry is redacted by the guard as it is written, whoever writes it.
"""

import sqlite3
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.guard import redact_value
from a2a_wrapper.state.database import writing

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    time REAL NOT NULL,
    agent TEXT NOT NULL,
    context_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    caller TEXT NOT NULL,
    tool TEXT NOT NULL,
    class TEXT NOT NULL,
    target TEXT NOT NULL,
    decision TEXT NOT NULL,
    rule TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    wait_ms REAL NOT NULL
)"""


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


COLUMNS = tuple(f.name for f in fields(AuditEntry))


class AuditLog:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def initialize(self) -> None:
        """Creates the table, or renames an older version's `answered_by` column to `decided_by`."""
        async with writing(self._engine) as db:
            columns = [row[1] for row in await db.execute(text("PRAGMA table_info(audit)"))]
            if "answered_by" in columns:
                await db.execute(text("ALTER TABLE audit RENAME COLUMN answered_by TO decided_by"))
            await db.execute(text(_SCHEMA))

    async def record(self, entry: AuditEntry) -> None:
        columns = ", ".join(f":{name}" for name in COLUMNS)
        values = redact_value(astuple(entry))
        async with writing(self._engine) as db:
            await db.execute(text(f"INSERT INTO audit VALUES ({columns})"), dict(zip(COLUMNS, values, strict=True)))


def recent(database: Path, limit: int, decision: str | None = None, caller: str | None = None) -> list[AuditEntry]:
    """The newest entries first, of one decision and one caller when given, read on a connection of its own,
    whether the agent runs or not (for `a2a-wrap audit`, and the operator endpoint off the loop)."""
    if not database.exists():
        return []
    filters = {name: value for name, value in (("decision", decision), ("caller", caller)) if value is not None}
    where = " AND ".join(f"{name} = :{name}" for name in filters)
    query = f"SELECT * FROM audit {'WHERE ' + where if where else ''} ORDER BY time DESC LIMIT :limit"
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        try:
            rows = db.execute(query, {**filters, "limit": limit}).fetchall()
        except sqlite3.OperationalError:  # no decision recorded yet: the table does not exist
            return []
    return [AuditEntry(*row) for row in rows]
