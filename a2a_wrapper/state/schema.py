"""The wrapper's own tables, one definition for SQLite and PostgreSQL (a2a-sdk defines its own: sdk_tables.py).

Created and upgraded by migrations.py at start. Times are Unix seconds (REAL / double precision).
"""

from sqlalchemy import Column, Float, Integer, MetaData, PrimaryKeyConstraint, Table, Text

metadata = MetaData()

context_sessions = Table(
    "context_sessions",
    metadata,
    Column("caller", Text, nullable=False),
    Column("context_id", Text, nullable=False),
    Column("backend", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("last_used", Float, nullable=False),
    PrimaryKeyConstraint("caller", "context_id"),
)

context_rules = Table(
    "context_rules",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),  # the order the rules were added in
    Column("caller", Text, nullable=False),
    Column("context_id", Text, nullable=False),
    Column("rule", Text, nullable=False),
)

audit = Table(
    "audit",
    metadata,
    Column("time", Float, nullable=False),
    Column("agent", Text, nullable=False),
    Column("context_id", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("caller", Text, nullable=False),
    Column("tool", Text, nullable=False),
    Column("class", Text, nullable=False),
    Column("target", Text, nullable=False),
    Column("decision", Text, nullable=False),
    Column("rule", Text, nullable=False),
    Column("decided_by", Text, nullable=False),
    Column("wait_ms", Float, nullable=False),
)

message_ledger = Table(
    "message_ledger",
    metadata,
    Column("caller", Text, nullable=False),
    Column("context_id", Text, nullable=False),
    Column("message_id", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("accepted", Float, nullable=False),
    PrimaryKeyConstraint("caller", "context_id", "message_id"),
)

context_leases = Table(  # which replica runs a context's turns (shared state only; leases.py)
    "context_leases",
    metadata,
    Column("caller", Text, nullable=False),
    Column("context_id", Text, nullable=False),
    Column("replica", Text, nullable=False),
    Column("url", Text, nullable=False),  # the holder's advertised URL
    Column("expires_at", Float, nullable=False),
    PrimaryKeyConstraint("caller", "context_id"),
)

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("description", Text, nullable=False),
    Column("applied_at", Float, nullable=False),
)
