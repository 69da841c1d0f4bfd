"""The agent's Prometheus metrics: one registry per agent, served at /metrics in the text format.

Counted as they happen: turns by outcome (a request that pauses for a person counts `input_required`; the
request that resumes it later counts the turn's end), turn latency and time to first text (time waiting
for a person excluded), shield decisions by class, outcome and who decided. Read at scrape time: approvals
waiting, backend restarts, sessions open, callers' backends running. Labels hold only closed sets of words,
never callers or content.
"""

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from a2a_wrapper.backends.base import Backend
from a2a_wrapper.state.sessions import SessionMap

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Outcome = Literal["completed", "failed", "canceled", "input_required", "rejected"]
OUTCOMES: tuple[Outcome, ...] = ("completed", "failed", "canceled", "input_required", "rejected")
DecidedBy = Literal["rules", "person", "deadline"]
_TURN_BUCKETS = (0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_FIRST_TEXT_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)


class AgentMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._turns = Counter(
            "a2a_wrapper_turns",
            "A2A requests of turns, by the state they ended in.",
            ["outcome"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "a2a_wrapper_turn_seconds",
            "Running time of ended turns (time waiting for a person excluded).",
            ["outcome"],
            buckets=_TURN_BUCKETS,
            registry=self.registry,
        )
        self._first_text = Histogram(
            "a2a_wrapper_first_text_seconds",
            "Running time of a turn until the first text of its answer was sent.",
            buckets=_FIRST_TEXT_BUCKETS,
            registry=self.registry,
        )
        self._decisions = Counter(
            "a2a_wrapper_shield_decisions",
            "Permission decisions, by the request's class, the outcome and who decided.",
            ["class", "outcome", "decided_by"],
            registry=self.registry,
        )
        self._egress = Counter(
            "a2a_wrapper_egress_decisions",
            "Connections out of the sandbox by the egress proxy's decision: allow, deny, or ask-denied (a rule said "
            "ask, which a proxy cannot put to a person, so it denied), or busy (refused unread: the proxy had its "
            "cap of connections open).",
            ["decision"],
            registry=self.registry,
        )
        for outcome in OUTCOMES:
            self._turns.labels(outcome)
        self._live = _LiveCollector()
        self.registry.register(self._live)
        self._sessions: SessionMap | None = None

    def turn(self) -> "TurnClock":
        """A clock for one turn, starting now."""
        return TurnClock(self)

    def ended(self, outcome: Outcome, running: float | None = None) -> None:
        self._turns.labels(outcome).inc()
        if running is not None:
            self._latency.labels(outcome).observe(running)

    def first_text(self, running: float) -> None:
        self._first_text.observe(running)

    def decided(self, cls: str, outcome: str, decided_by: str) -> None:
        """`decided_by` is "rules", "deadline", or a person (any other name: it is not kept)."""
        label: DecidedBy = "rules" if decided_by == "rules" else "deadline" if decided_by == "deadline" else "person"
        self._decisions.labels(cls, outcome, label).inc()

    def egress(self, outcome: str) -> None:
        self._egress.labels(outcome).inc()

    def watch(
        self,
        backend: Backend,
        sessions: SessionMap,
        waiting: Callable[[], Mapping[str, int]],
        running: Callable[[], int] | None = None,
    ) -> None:
        """What is read at scrape time: the backend's restarts, the sessions open, the turns waiting for a person
        by what they wait for, and (one backend per caller) how many callers' backends run."""
        self._live.backend = backend
        self._live.waiting = waiting
        self._live.running = running
        self._sessions = sessions

    async def exposition(self) -> bytes:
        """The text format; the sessions are counted first (a database query, so not inside `collect`)."""
        if self._sessions is not None:
            self._live.sessions_open = len(await self._sessions.known_sessions())
        return generate_latest(self.registry)


class TurnClock:
    """One turn's running time; `pause` and `resume` around waits for a person. Each end is counted once."""

    def __init__(self, metrics: AgentMetrics) -> None:
        self._metrics = metrics
        self._started = time.monotonic()
        self._paused_at: float | None = None
        self._waited = 0.0
        self._text_seen = False
        self._ended = False

    def running(self) -> float:
        now = time.monotonic()
        return now - self._started - self._waited - (now - self._paused_at if self._paused_at is not None else 0.0)

    def first_text(self) -> None:
        if not self._text_seen:
            self._text_seen = True
            self._metrics.first_text(self.running())

    def pause(self) -> None:
        self._metrics.ended("input_required")
        if self._paused_at is None:
            self._paused_at = time.monotonic()

    def resume(self) -> None:
        if self._paused_at is not None:
            self._waited += time.monotonic() - self._paused_at
            self._paused_at = None

    def end(self, outcome: Outcome) -> None:
        if not self._ended:
            self._ended = True
            self._metrics.ended(outcome, self.running())


class _LiveCollector(Collector):
    """Values owned by other objects, read when scraped."""

    def __init__(self) -> None:
        self.backend: Backend | None = None
        self.waiting: Callable[[], Mapping[str, int]] | None = None
        self.running: Callable[[], int] | None = None
        self.sessions_open = 0

    def collect(self) -> Iterator[Metric]:
        if self.backend is None or self.waiting is None:
            return
        restarts = CounterMetricFamily(
            "a2a_wrapper_backend_restarts", "Times the backend process was restarted.", labels=["backend"]
        )
        restarts.add_metric([self.backend.kind], float(self.backend.restarts))
        waiting = GaugeMetricFamily(
            "a2a_wrapper_approvals_waiting", "Turns paused for a person, by what they wait for.", labels=["kind"]
        )
        counts = self.waiting()
        for kind in ("approval", "question"):
            waiting.add_metric([kind], counts.get(kind, 0))
        yield restarts
        yield waiting
        yield GaugeMetricFamily("a2a_wrapper_sessions_open", "Backend sessions the agent keeps.", self.sessions_open)
        if self.running is not None:
            yield GaugeMetricFamily(
                "a2a_wrapper_backends_running",
                "Callers' backends running now (tenants.max_running at most).",
                self.running(),
            )

    def describe(self) -> Iterator[Metric]:
        return iter(())  # nothing to check at registration
