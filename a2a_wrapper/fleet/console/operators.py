"""Who is at the console: the operators and their keys, and the sessions they open by signing in.

A session is a random token in an HttpOnly cookie, kept in memory only (a restarted registry signs everyone
out), bounded in number (the oldest goes first) and expired after twelve hours. Each session carries its own
CSRF token, which the page sends back on every action.
"""

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from a2a_wrapper.fleet.fleet_file import Operator

LINK_OPERATOR = "owner"  # who signs in with the fleet's one-time link (no operators configured): its owner
SESSION_LIFETIME = 12 * 3600.0
MAX_SESSIONS = 256


class Operators:
    """The fleet file's operators, their keys read once at start."""

    def __init__(self, keys: dict[str, str]) -> None:
        self._keys = keys

    @classmethod
    def from_settings(cls, operators: Iterable[Operator]) -> "Operators":
        return cls({operator.name: operator.key() for operator in operators})

    @property
    def configured(self) -> bool:
        """False: the console is entered only through the one-time links the fleet prints (links.py)."""
        return bool(self._keys)

    def check(self, name: str, key: str) -> bool:
        """Whether `key` is `name`'s key, compared in constant time."""
        expected = self._keys.get(name)
        if expected is None or not key:
            return False
        return hmac.compare_digest(key.encode(), expected.encode())


@dataclass(frozen=True)
class Session:
    operator: str
    csrf: str
    expires: float


class Sessions:
    """Signed-in operators by session token."""

    def __init__(
        self,
        lifetime: float = SESSION_LIFETIME,
        limit: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lifetime = lifetime
        self._limit = limit
        self._clock = clock
        self._open: OrderedDict[str, Session] = OrderedDict()

    def open(self, operator: str) -> str:
        """A new session's token; past the limit, the oldest session is closed."""
        token = secrets.token_urlsafe(32)
        self._open[token] = Session(operator, secrets.token_urlsafe(32), self._clock() + self._lifetime)
        while len(self._open) > self._limit:
            self._open.popitem(last=False)
        return token

    def find(self, token: str | None) -> Session | None:
        """The live session of `token`; an expired one is closed and not found."""
        session = self._open.get(token) if token else None
        if session is None:
            return None
        if session.expires <= self._clock():
            self.close(token)
            return None
        return session

    def close(self, token: str | None) -> None:
        if token:
            self._open.pop(token, None)

    def __len__(self) -> int:
        return len(self._open)
