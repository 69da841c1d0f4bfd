"""Why the state database cannot be used, as one sentence: where (state.url with its password masked, or
state_dir) and what went wrong (connection refused, unknown host, the login refused, no such database, a folder
that cannot be written), instead of the driver's traceback. The start stops with it; readiness shows it.
"""

import socket
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from a2a_wrapper.errors import StateUnavailable
from a2a_wrapper.state.engines import CONNECT_TIMEOUT, StateDatabase

_LOGIN_REFUSED = "28"  # SQLSTATE class: invalid authorization (no such role, a wrong password)


@asynccontextmanager
async def reaching(database: StateDatabase) -> AsyncIterator[None]:
    """Whatever the database or its driver raises inside becomes `StateUnavailable` with its sentence."""
    try:
        yield
    except (OSError, SQLAlchemyError, sqlite3.Error) as exc:  # TimeoutError and the resolver's errors are OSErrors
        raise StateUnavailable(unusable(database, exc)) from exc


def unusable(database: StateDatabase, exc: BaseException, waited: float = CONNECT_TIMEOUT) -> str:
    """The sentence; `waited`: the seconds a timeout allowed."""
    return f"{database.described()}: the state database cannot be used: {_reason(database, exc, waited)}"


def _reason(database: StateDatabase, exc: BaseException, waited: float) -> str:
    address = _address(database)
    if isinstance(exc, ConnectionRefusedError):
        return f"connection refused (nothing listens at {address})"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({address.rpartition(':')[0]}: {exc.strerror})"
    if isinstance(exc, TimeoutError):
        return f"no answer from {address} within {waited:g} s"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    cause = next((error for error in _chain(exc) if getattr(error, "sqlstate", None)), None)
    if cause is not None:
        message = str(cause).splitlines()[0]
        refused = str(getattr(cause, "sqlstate", "")).startswith(_LOGIN_REFUSED)
        return f"the server refused the login: {message}" if refused else message
    driver = getattr(exc, "orig", None) or exc
    return str(driver).splitlines()[0]


def _address(database: StateDatabase) -> str:
    if database.url is None:
        return str(database.path)
    url = make_url(database.url)
    return f"{url.host or 'localhost'}:{url.port or 5432}"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = exc
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__
