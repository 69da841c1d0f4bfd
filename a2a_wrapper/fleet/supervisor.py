"""One `a2a-wrap serve` child per agent: started, watched, restarted with backoff, stopped within a bound.

An agent's states: starting -> running (its /health answered) -> backoff (it exited; waiting to restart)
-> starting ... or fatal (too many crashes within the window). A stopped agent is one the fleet stopped.
"""

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

import httpx
from google.protobuf.json_format import MessageToDict

from a2a_wrapper.backoff import CrashHistory
from a2a_wrapper.config.files import default_state_dir
from a2a_wrapper.errors import BackendUnavailable
from a2a_wrapper.fleet.agent_log import AgentLog, log_path
from a2a_wrapper.fleet.fleet_file import RestartPolicy
from a2a_wrapper.fleet.health import probe_health
from a2a_wrapper.fleet.registry import describe_agent
from a2a_wrapper.fleet.spec import AgentSpec
from a2a_wrapper.frontend.card import build_card
from a2a_wrapper.process import ChildProcess

log = logging.getLogger(__name__)

# The fleet stamps each of its agents' lines itself and logs it at the agent's own level.
CHILD_LOGGING = {"A2A_WRAP_LOGGING__TIMESTAMPS": "false"}

State = Literal["starting", "running", "backoff", "fatal", "stopped"]
_START_MARGIN = 30.0  # the interpreter, the database and the front end, on top of the backend's own start


class SupervisedAgent:
    def __init__(
        self,
        spec: AgentSpec,
        policy: RestartPolicy,
        http: httpx.AsyncClient,
        on_running: "OnRunning | None" = None,
        console_key: str | None = None,
    ) -> None:
        self.spec = spec
        self.console_key = console_key  # handed to the child, which opens its operator endpoint to that key
        self.state: State = "starting"
        self.restarts = 0
        self.pid: int | None = None
        self.last_health: dict[str, Any] | None = None
        self.last_exit: str | None = None
        self.card: dict[str, Any] = MessageToDict(build_card(spec.settings))
        self._policy = policy
        self._http = http
        self._crashes = CrashHistory(policy)
        self._stop = asyncio.Event()
        self._child: ChildProcess | None = None
        self._on_running = on_running
        self.log_file = AgentLog(log_path(spec.settings.state_dir or default_state_dir(spec.name)))

    @property
    def name(self) -> str:
        return self.spec.name

    def request_stop(self) -> None:
        self._stop.set()

    def kill(self) -> None:
        """SIGKILL to the child's group; its backend dies with it (it is set to die with its parent)."""
        if self._child is not None and self._child.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._child.pid, signal.SIGKILL)

    async def run(self) -> None:
        """Supervise until stopped or fatal."""
        try:
            await self._supervise()
        except Exception:  # a boundary: one agent's failure must not take the fleet down
            log.exception("[%s] supervision failed", self.name)
            self.state = "fatal"
        if self.state != "fatal":
            self.state = "stopped"
        self.log_file.close()

    async def _supervise(self) -> None:
        while not self._stop.is_set():
            reason = await self._run_child()
            if self._stop.is_set():
                return
            self.last_exit = reason
            delay = self._crashes.record(time.monotonic())
            if delay is None:
                self.state = "fatal"
                log.error(
                    "[%s] fatal: it crashed %d times within %.0f s; not restarting. Last: %s",
                    self.name,
                    self._crashes.recent,
                    self._policy.window,
                    reason,
                )
                return
            self.state = "backoff"
            log.warning("[%s] %s; restarting in %.1f s", self.name, reason, delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
            if not self._stop.is_set():
                self.restarts += 1

    async def _run_child(self) -> str:
        """One life of the child; it ends when the child exits (the reason is returned) or a stop is requested."""
        self.state = "starting"
        self.last_health = None
        child = ChildProcess(
            self.name,
            self.spec.argv(),
            {**os.environ, **CHILD_LOGGING, **self._console_env()},
            self.spec.config.parent,
            output_level=None,
            on_line=self.log_file.line,
        )
        self._child = child
        await child.start()  # ready when its /health answers: no log line is relied on (its level may hide it)
        self.pid = child.pid
        self.log_file.line(f"--- fleet: started (pid {child.pid})")
        life = asyncio.create_task(self._live(child), name=f"{self.name}-life")
        stop = asyncio.create_task(self._stop.wait(), name=f"{self.name}-stop")
        try:
            await asyncio.wait({life, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            life.cancel()
            await child.stop(self._policy.stop_grace)  # for an exited child: whatever is left in its group
            await asyncio.gather(life, stop, return_exceptions=True)
            self._child = None
        if self._stop.is_set() or life.cancelled():
            log.info("[%s] stopped (pid %s)", self.name, child.pid)
            self.log_file.line(f"--- fleet: stopped (pid {child.pid})")
            return "stopped"
        self.log_file.line(f"--- fleet: {life.result()}")
        return life.result()

    def _console_env(self) -> dict[str, str]:
        """The run's console key, under the name the agent's config reads it from (console.key_env)."""
        return {self.spec.settings.console.key_env: self.console_key} if self.console_key else {}

    async def _live(self, child: ChildProcess) -> str:
        timeout = self.spec.settings.backend.startup_timeout + _START_MARGIN
        try:
            await self._until_answered(child, timeout)
        except BackendUnavailable as exc:
            return str(exc)
        self.state = "running"
        log.info("[%s] running (pid %s) at %s", self.name, child.pid, self.spec.url)
        if self._on_running is not None:
            self._on_running(self)
        code = await child.wait()
        return f"pid {child.pid} exited with code {code}; last output: {child.last_output()}"

    async def _until_answered(self, child: ChildProcess, timeout: float) -> None:
        try:
            async with asyncio.timeout(timeout):
                while True:
                    if not child.running:
                        raise BackendUnavailable(
                            f"pid {child.pid} exited before its /health answered: {child.last_output()}"
                        )
                    health = await probe_health(self._http, self.spec.url)
                    if "status_code" in health:
                        self.last_health = health
                        return
                    await asyncio.sleep(0.2)
        except TimeoutError:
            raise BackendUnavailable(f"its /health did not answer within {timeout:.0f} s") from None

    async def refresh(self, http: httpx.AsyncClient) -> None:
        if self.state == "running":
            self.last_health = await probe_health(http, self.spec.url)

    def describe(self) -> dict[str, Any]:
        backend = self.spec.settings.backend
        return describe_agent(
            self.name,
            self.spec.url,
            self.spec.card_url,
            self.state,
            self.card,
            backend=backend.kind,
            model=getattr(backend, "model", None),
            last_health=self.last_health,
            restarts=self.restarts,
            supervised=True,
            pid=self.pid if self.state in ("starting", "running") else None,
            config=str(self.spec.config),
            last_exit=self.last_exit,
            log=str(self.log_file.path),
        )


OnRunning = Callable[[SupervisedAgent], None]


class Supervisor:
    """The fleet's agents by config file; each supervised in its own task, every task awaited at teardown."""

    def __init__(
        self,
        policy: RestartPolicy,
        http: httpx.AsyncClient,
        on_running: "OnRunning | None" = None,
        console_key: str | None = None,
    ) -> None:
        self._policy = policy
        self._http = http
        self._console_key = console_key  # one per fleet run: every agent's operator endpoint takes it
        self._on_running = on_running  # called each time an agent's /health first answers (after each start)
        self._agents: dict[Path, SupervisedAgent] = {}
        self._tasks: dict[Path, asyncio.Task[None]] = {}

    @property
    def specs(self) -> dict[Path, AgentSpec]:
        return {config: agent.spec for config, agent in self._agents.items()}

    def agents(self) -> list[SupervisedAgent]:
        return list(self._agents.values())

    def start(self, spec: AgentSpec) -> None:
        assert spec.config not in self._agents, f"{spec.config} is already supervised"
        agent = SupervisedAgent(spec, self._policy, self._http, self._on_running, self._console_key)
        self._agents[spec.config] = agent
        self._tasks[spec.config] = asyncio.create_task(agent.run(), name=f"supervise-{spec.name}")
        log.info("[%s] starting from %s on port %d", spec.name, spec.config, spec.port)

    async def stop(self, configs: Iterable[Path]) -> None:
        """Stop these agents concurrently: SIGTERM, the policy's grace, then SIGKILL."""
        configs = list(configs)
        for config in configs:
            self._agents[config].request_stop()
        await asyncio.gather(*(self._tasks[config] for config in configs))
        for config in configs:
            self._agents.pop(config, None)
            self._tasks.pop(config, None)

    async def stop_all(self) -> None:
        await self.stop(list(self._agents))

    def kill_all(self) -> None:
        for agent in self._agents.values():
            agent.kill()
