"""Where an agent's state lives: the SQLite file in its state folder (the default), or a PostgreSQL database that
the agent's replicas share (`state.url`). One engine per agent; the URL is shown only with its password masked."""

import os
import socket
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from a2a_wrapper import fast_json
from a2a_wrapper.config.settings import AgentSettings, masked_url
from a2a_wrapper.state.database import open_database

STATE_FILE = "state.db"
CONNECT_TIMEOUT = 10.0  # seconds for a connection to PostgreSQL (asyncpg's own default is 60)


@dataclass(frozen=True, slots=True)
class StateDatabase:
    """The agent's state database: a SQLite file (`path`) or a PostgreSQL `url`."""

    path: Path | None = None
    url: str | None = None

    @property
    def shared(self) -> bool:
        """Whether other processes (the agent's replicas) may write it at the same time."""
        return self.url is not None

    def __str__(self) -> str:
        return str(self.path) if self.url is None else masked_url(self.url)

    def described(self) -> str:
        """Where the state is, by its config key: `state.url postgresql://u:***@host/db` or `state_dir /path`."""
        if self.url is not None:
            return f"state.url {masked_url(self.url)}"
        assert self.path is not None
        return f"state_dir {self.path.parent} (its file {self.path.name})"

    def engine_url(self) -> URL:
        assert self.url is not None, "a SQLite file has no server URL"
        return make_url(self.url).set(drivername="postgresql+asyncpg")


def state_database(settings: AgentSettings) -> StateDatabase:
    if settings.state.url is not None:
        return StateDatabase(url=settings.state.url)
    assert settings.state_dir is not None
    return StateDatabase(path=settings.state_dir / STATE_FILE)


def open_state(database: StateDatabase) -> AsyncEngine:
    """The engine on the agent's state: the SQLite file in WAL mode, or a pool on the PostgreSQL server. The file
    is opened once here first: one that cannot be raises sqlite3's error now, before aiosqlite's thread would
    (whose failed connection outlives the loop it reports to)."""
    if database.path is not None:
        sqlite3.connect(database.path).close()
        return open_database(database.path)
    return create_async_engine(
        database.engine_url(),
        pool_size=10,
        max_overflow=20,
        pool_pre_ping=True,
        json_serializer=fast_json.dumps,
        connect_args={"timeout": CONNECT_TIMEOUT},
    )


def is_shared(engine: AsyncEngine) -> bool:
    """Whether the engine's database is a server that other replicas write too (not this process's SQLite file)."""
    return engine.dialect.name != "sqlite"


def replica_name(settings: AgentSettings) -> str:
    """This replica's name in the leases: as configured, else HOSTNAME-PID (unique among live replicas)."""
    return settings.state.replica or f"{socket.gethostname()}-{os.getpid()}"
