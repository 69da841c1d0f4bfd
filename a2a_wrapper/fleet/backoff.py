"""How long to wait before restarting a crashed agent, and when to give up on it."""

from a2a_wrapper.fleet.fleet_file import RestartPolicy


class CrashHistory:
    """The crashes of one agent within the policy's window."""

    def __init__(self, policy: RestartPolicy) -> None:
        self._policy = policy
        self._times: list[float] = []

    def record(self, now: float) -> float | None:
        """Seconds to wait before the next start, or None when the agent crashed too often (fatal)."""
        self._times = [time for time in self._times if now - time < self._policy.window] + [now]
        if len(self._times) > self._policy.max_crashes:
            return None
        return float(min(self._policy.max_backoff, self._policy.backoff * 2 ** (len(self._times) - 1)))

    @property
    def recent(self) -> int:
        return len(self._times)
