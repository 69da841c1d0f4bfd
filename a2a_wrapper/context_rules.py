"""A person's "always": shield rules of one A2A context, kept with its session in the agent's SQLite file."""

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.shield import Rule

_SCHEMA = "CREATE TABLE IF NOT EXISTS context_rules (context_id TEXT NOT NULL, rule TEXT NOT NULL)"


class ContextRules:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._cache: dict[str, list[Rule]] = {}

    async def initialize(self) -> None:
        async with self._engine.begin() as db:
            await db.execute(text(_SCHEMA))

    async def of(self, context_id: str) -> list[Rule]:
        if context_id not in self._cache:
            async with self._engine.connect() as db:
                rows = await db.execute(
                    text("SELECT rule FROM context_rules WHERE context_id = :c ORDER BY rowid"), {"c": context_id}
                )
                self._cache[context_id] = [Rule.model_validate_json(row[0]) for row in rows]
        return self._cache[context_id]

    async def add(self, context_id: str, rule: Rule) -> None:
        rules = await self.of(context_id)
        async with self._engine.begin() as db:
            await db.execute(
                text("INSERT INTO context_rules VALUES (:c, :r)"),
                {"c": context_id, "r": rule.model_dump_json(by_alias=True, exclude_none=True)},
            )
        rules.append(rule)
