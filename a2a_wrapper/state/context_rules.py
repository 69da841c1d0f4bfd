"""A person's "always": shield rules of one caller's A2A context, kept with its session in the agent's state."""

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.shield import Rule
from a2a_wrapper.state import schema
from a2a_wrapper.state.database import writing
from a2a_wrapper.state.migrations import migrate
from a2a_wrapper.state.sessions import ContextKey

_RULES = schema.context_rules


class ContextRules:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._cache: dict[ContextKey, list[Rule]] = {}

    async def initialize(self) -> None:
        """The state's schema, brought up to date (migrations.py)."""
        await migrate(self._engine)

    async def of(self, key: ContextKey) -> list[Rule]:
        if key not in self._cache:
            query = select(_RULES.c.rule).where(_RULES.c.caller == key.caller, _RULES.c.context_id == key.context_id)
            async with self._engine.connect() as db:
                rows = await db.execute(query.order_by(_RULES.c.id))
                self._cache[key] = [Rule.model_validate_json(row[0]) for row in rows]
        return self._cache[key]

    async def add(self, key: ContextKey, rule: Rule) -> None:
        rules = await self.of(key)
        kept = rule.model_dump_json(by_alias=True, exclude_none=True)
        async with writing(self._engine) as db:
            await db.execute(insert(_RULES).values(caller=key.caller, context_id=key.context_id, rule=kept))
        rules.append(rule)
