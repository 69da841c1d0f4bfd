"""The agent's SQLite file: writes queue in this process, so none fails with "database is locked" under load."""

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import text

from a2a_wrapper.state.database import open_database, writing, written


@pytest.mark.slow  # six seconds, on purpose
async def test_a_write_waits_its_turn_however_long_the_one_before_takes(tmp_path: Path) -> None:
    engine = open_database(tmp_path / "state.db")
    try:
        async with writing(engine) as db:
            await db.execute(text("CREATE TABLE t (n INTEGER)"))
        first_in = asyncio.Event()

        async def slow_writer() -> None:
            async with writing(engine) as db:
                await db.execute(text("INSERT INTO t VALUES (1)"))
                first_in.set()
                await asyncio.sleep(6)  # past SQLite's 5 s busy timeout, which would fail the next writer

        async def second_writer() -> None:
            await first_in.wait()
            async with writing(engine) as db:
                await db.execute(text("INSERT INTO t VALUES (2)"))

        async with asyncio.timeout(30):
            await asyncio.gather(slow_writer(), second_writer())
        async with engine.connect() as db:
            assert [row[0] for row in await db.execute(text("SELECT n FROM t ORDER BY rowid"))] == [1, 2]
    finally:
        await engine.dispose()


async def test_many_writers_at_once_all_land_in_order_of_arrival(tmp_path: Path) -> None:
    engine = open_database(tmp_path / "state.db")
    try:
        async with writing(engine) as db:
            await db.execute(text("CREATE TABLE t (n INTEGER)"))

        async def insert(n: int) -> None:
            async with writing(engine) as db:
                await db.execute(text("INSERT INTO t VALUES (:n)"), {"n": n})

        async def insert_through_another_library(n: int) -> None:
            async def write() -> None:
                async with engine.begin() as db:
                    await db.execute(text("INSERT INTO t VALUES (:n)"), {"n": n})

            await written(engine, write)

        async with asyncio.timeout(60):
            await asyncio.gather(*(insert(n) if n % 2 else insert_through_another_library(n) for n in range(200)))
        async with engine.connect() as db:
            assert [row[0] for row in await db.execute(text("SELECT n FROM t ORDER BY rowid"))] == list(range(200))
    finally:
        await engine.dispose()
