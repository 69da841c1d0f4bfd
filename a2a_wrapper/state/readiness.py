"""Whether the state database answers now, for readiness (/health): a cheap, bounded check whose answer is kept
for a moment, so that many probes at once (a load balancer's, the fleet's, a person's) make one round trip."""

import asyncio
import sqlite3
import time

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.engines import StateDatabase
from a2a_wrapper.state.unavailable import unusable

FRESH = 1.0  # seconds an answer is reused
BOUND = 2.0  # seconds a check may take: past it the database is not ready


class StateCheck:
    def __init__(self, engine: AsyncEngine, database: StateDatabase) -> None:
        self._engine = engine
        self.database = database
        self._lock = asyncio.Lock()  # one check at a time; who waited reads its answer
        self._answer: str | None = None
        self._at = -FRESH

    async def problem(self) -> str | None:
        """None when the database answered within the last FRESH s; else why it is not usable, as a sentence."""
        async with self._lock:
            if time.monotonic() - self._at >= FRESH:
                self._answer = await self._check()
                self._at = time.monotonic()
            return self._answer

    async def _check(self) -> str | None:
        try:
            async with asyncio.timeout(BOUND), self._engine.connect() as db:
                await db.execute(text("SELECT 1"))
        except (OSError, SQLAlchemyError, sqlite3.Error) as exc:  # TimeoutError is an OSError
            return unusable(self.database, exc, waited=BOUND)
        return None
