"""The audit log: an older version's file, whose who-decided column was `answered_by`, is read and written on."""

import sqlite3
from pathlib import Path

from sqlalchemy.ext.asyncio import create_async_engine

from a2a_wrapper.state.audit import AuditEntry, AuditLog, recent

OLD_SCHEMA = """
CREATE TABLE audit (
    time REAL NOT NULL, agent TEXT NOT NULL, context_id TEXT NOT NULL, task_id TEXT NOT NULL, caller TEXT NOT NULL,
    tool TEXT NOT NULL, class TEXT NOT NULL, target TEXT NOT NULL, decision TEXT NOT NULL, rule TEXT NOT NULL,
    answered_by TEXT NOT NULL, wait_ms REAL NOT NULL
)"""


def entry(time: float, decided_by: str) -> AuditEntry:
    return AuditEntry(
        time=time,
        agent="a",
        context_id="c",
        task_id="t",
        caller="",
        tool="bash",
        cls="execute",
        target="ls",
        decision="deny",
        rule="person:deadline",
        decided_by=decided_by,
        wait_ms=1.0,
    )


async def test_an_older_file_keeps_its_rows_and_its_column_is_renamed_decided_by(tmp_path: Path) -> None:
    database = tmp_path / "state.db"
    with sqlite3.connect(database) as db:
        db.execute(OLD_SCHEMA)
        db.execute("INSERT INTO audit VALUES (1, 'a', 'c', 't', '', 'bash', 'execute', 'ls', 'deny', 'r', 'person', 1)")
    engine = create_async_engine(f"sqlite+aiosqlite:///{database}")
    try:
        audit = AuditLog(engine)
        await audit.initialize()
        await audit.initialize()  # a second start finds the new column and changes nothing
        await audit.record(entry(2, "deadline"))
    finally:
        await engine.dispose()
    with sqlite3.connect(database) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(audit)")]
    assert "decided_by" in columns and "answered_by" not in columns
    assert [e.decided_by for e in recent(database, 10)] == ["deadline", "person"]
