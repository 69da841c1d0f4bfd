"""A person's "always": shield rules of one caller's A2A context, kept with its session in the agent's SQLite file."""

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.shield import Rule
from a2a_wrapper.state.database import writing
from a2a_wrapper.state.sessions import ContextKey, migrate_to_callers

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS context_rules (caller TEXT NOT NULL, context_id TEXT NOT NULL, rule TEXT NOT NULL)"
)


class ContextRules:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._cache: dict[ContextKey, list[Rule]] = {}

    async def initialize(self) -> None:
        """Creates the table, or brings an older version's up to date; after the task store's `initialize`."""
        async with writing(self._engine) as db:
            await migrate_to_callers(db, "context_rules", _SCHEMA)
            await db.execute(text(_SCHEMA))

    async def of(self, key: ContextKey) -> list[Rule]:
        if key not in self._cache:
            async with self._engine.connect() as db:
                rows = await db.execute(
                    text("SELECT rule FROM context_rules WHERE caller = :a AND context_id = :c ORDER BY rowid"),
                    {"a": key.caller, "c": key.context_id},
                )
                self._cache[key] = [Rule.model_validate_json(row[0]) for row in rows]
        return self._cache[key]

    async def add(self, key: ContextKey, rule: Rule) -> None:
        rules = await self.of(key)
        async with writing(self._engine) as db:
            await db.execute(
                text("INSERT INTO context_rules (caller, context_id, rule) VALUES (:a, :c, :r)"),
                {"a": key.caller, "c": key.context_id, "r": rule.model_dump_json(by_alias=True, exclude_none=True)},
            )
        rules.append(rule)
