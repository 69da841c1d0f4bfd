"""The console's view of the fleet, live: every agent the registry lists, with its tasks and the approvals it waits
on, kept current by one event stream per agent (reconnected with backoff), and one change signal that every
browser's stream waits on.

What an agent's stream says replaces what the console knew of it; an agent whose stream is down shows no tasks
and no approvals, only the sentence why (the console does not show what it cannot vouch for).
"""

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx

from a2a_wrapper.backoff import Backoff, CrashHistory
from a2a_wrapper.fleet.console.agent_api import CALL_TIMEOUT, ConsoleUnreachable, follow_state
from a2a_wrapper.fleet.registry import Listed

log = logging.getLogger(__name__)

RECONNECT = Backoff(backoff=0.5, max_backoff=15.0, window=120.0)
NOT_SERVING = ("starting", "backoff", "fatal", "stopped")  # a supervised agent's states with nobody to ask
SAMPLE_INTERVAL = 1.0
CONNECTED = "ok"


class Changes:
    """A signal that wakes every waiter once per change."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait(self, timeout: float | None = None) -> bool:
        """True on a change, False when `timeout` passed first."""
        try:
            async with asyncio.timeout(timeout):
                await self._event.wait()
        except TimeoutError:
            return False
        return True


class Feed:
    """One agent's tasks and approvals, as its /operator/v1/events stream last said."""

    def __init__(self, agent: Listed, http: httpx.AsyncClient, changes: Changes) -> None:
        self.agent = agent
        self._http = http
        self._changes = changes
        self._state: dict[str, Any] | None = None
        self._status = "not connected yet"

    def view(self) -> dict[str, Any]:
        state = self._state or {}
        return {
            "tasks": state.get("tasks", []),
            "approvals": state.get("approvals", []),
            "approvers": state.get("approvers", []),
            "console": self._status,
        }

    async def run(self) -> None:
        try:
            await self._follow()
        except Exception:  # a boundary per agent: the others' feeds go on
            log.exception("[%s] console: following the agent failed", self.agent.name)
            self._set(None, "the registry failed following this agent (its log says why)")

    async def _follow(self) -> None:
        """Follow the agent's stream while it serves; reconnect with backoff, afresh after each stream that answered."""
        crashes = CrashHistory(RECONNECT)
        while True:
            state = self.agent.describe()["state"]
            if state in NOT_SERVING:
                self._set(None, f"the agent is {state}")
                await self._changes.wait()
                continue
            try:
                async for sent in follow_state(self._http, self.agent.describe()["url"], self.agent.console_key):
                    if self._state is None:
                        log.info("[%s] console: following its approvals", self.agent.name)
                        crashes = CrashHistory(RECONNECT)
                    self._set(sent, CONNECTED)
                status = "the agent closed its event stream"
            except ConsoleUnreachable as exc:
                status = str(exc)
            if status != self._status:
                log.info("[%s] console: %s", self.agent.name, status)
            self._set(None, status)
            await asyncio.sleep(crashes.delay(time.monotonic()))

    def _set(self, state: dict[str, Any] | None, status: str) -> None:
        if (state, status) != (self._state, self._status):
            self._state, self._status = state, status
            self._changes.notify()


class Hub:
    """Every listed agent's feed, started and stopped as the listing changes (hot reload)."""

    def __init__(self, listing: Callable[[], Sequence[Listed]]) -> None:
        self._listing = listing
        self.changes = Changes()
        self.closed = False
        self._http: httpx.AsyncClient | None = None
        self._feeds: dict[Listed, tuple[Feed, asyncio.Task[None]]] = {}
        self._ending: set[asyncio.Task[None]] = set()  # feeds of agents no longer listed, awaited at teardown

    @property
    def http(self) -> httpx.AsyncClient:
        assert self._http is not None, "the hub is not running"
        return self._http

    def agents(self) -> list[Listed]:
        return list(self._listing())

    def find(self, name: str) -> Listed | None:
        return next((agent for agent in self._listing() if agent.name == name), None)

    def snapshot(self) -> list[dict[str, Any]]:
        """Each agent's registry entry with its tasks, its approvals and whether the console reaches it."""
        entries = []
        for agent in self._listing():
            feed = self._feeds.get(agent)
            view = feed[0].view() if feed else {"tasks": [], "approvals": [], "approvers": [], "console": "starting"}
            entries.append({**agent.describe(), **view})
        return entries

    def close(self) -> None:
        """Every browser's stream is told to end (the feeds go on until `running` ends)."""
        self.closed = True
        self.changes.notify()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator["Hub"]:
        """The feeds followed until the block ends; then every browser stream is told to end."""
        async with httpx.AsyncClient(timeout=CALL_TIMEOUT) as http:
            self._http = http
            sampling = asyncio.create_task(self._sample(), name="console-hub")
            try:
                yield self
            finally:
                self.close()
                tasks = [sampling, *(task for _, task in self._feeds.values()), *self._ending]
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                self._feeds.clear()
                self._http = None

    async def _sample(self) -> None:
        """The listing sampled each second: its agents' states and health change inside the supervisor and the
        health poll, which know nothing of the console; comparing a second's listing is cheaper than threading a
        callback through both. A changed listing starts and stops feeds and wakes the browsers."""
        seen = ""
        while True:
            agents = self.agents()
            self._sync(agents)
            now = json.dumps([agent.describe() for agent in agents], default=str, sort_keys=True)
            if now != seen:
                seen = now
                self.changes.notify()
            await asyncio.sleep(SAMPLE_INTERVAL)

    def _sync(self, agents: list[Listed]) -> None:
        for gone in [agent for agent in self._feeds if agent not in agents]:
            task = self._feeds.pop(gone)[1]
            task.cancel()
            self._ending.add(task)
            task.add_done_callback(self._ending.discard)
        for agent in agents:
            if agent not in self._feeds:
                feed = Feed(agent, self.http, self.changes)
                self._feeds[agent] = (feed, asyncio.create_task(feed.run(), name=f"console-{agent.name}"))
