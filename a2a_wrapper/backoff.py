"""How long to wait before starting a crashed process again, and when to give up on it (supervisord's idea).

One table for both supervisors: the fleet restarting its agents, and each backend restarting its agent process.
The delay doubles with each crash still inside the window, up to a cap; more crashes than `max_crashes` within
the window is fatal, unless there is no limit.
"""

from dataclasses import dataclass
from typing import Protocol


class Pacing(Protocol):
    """A restart policy's numbers (the fleet file's `restart:` section is one)."""

    @property
    def backoff(self) -> float: ...

    @property
    def max_backoff(self) -> float: ...

    @property
    def max_crashes(self) -> int | None: ...

    @property
    def window(self) -> float: ...


@dataclass(frozen=True)
class Backoff:
    """A Pacing of fixed numbers."""

    backoff: float
    max_backoff: float
    window: float
    max_crashes: int | None = None  # None: never fatal


class CrashHistory:
    """The crashes of one process within the policy's window."""

    def __init__(self, policy: Pacing) -> None:
        self._policy = policy
        self._times: list[float] = []

    def record(self, now: float) -> float | None:
        """Seconds to wait before the next start, or None when the process crashed too often (fatal)."""
        self._times = [time for time in self._times if now - time < self._policy.window] + [now]
        limit = self._policy.max_crashes
        if limit is not None and len(self._times) > limit:
            return None
        return float(min(self._policy.max_backoff, self._policy.backoff * 2 ** (len(self._times) - 1)))

    def delay(self, now: float) -> float:
        """`record` under a policy with no crash limit, which always waits and never gives up."""
        delay = self.record(now)
        assert delay is not None, "this policy has a crash limit: use record"
        return delay

    @property
    def recent(self) -> int:
        return len(self._times)
