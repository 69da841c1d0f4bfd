"""The wrapped agent in a process of its own, as `a2a-wrap` runs it, for the benches that compare it with its
backend called directly.

Run in the bench's own process, the agent's event loop also ran the offline model and both clients, and the
direct client's reading of OpenCode's events (every session's: OpenCode sends them all to every subscriber)
held that loop while a 300-delta burst came in. Traced on 2026-12-03: the first text of such a reply took
0.7 ms (p50) from OpenCode's event to the caller's SSE event with the bench's direct client not listening, and
4.7 ms with it, nearly all of it waiting for the loop between a2a-sdk's queues. A deployed agent shares its loop
with nothing of the kind, so here it has a process of its own (started by `multiprocessing`'s spawn, served by
the same `running_agent` and uvicorn configuration `a2a-wrap` uses), and the bench's process keeps the model and
both clients, alike in both modes. The agent's CPU is read from /proc per turn, in nanoseconds, over all its
threads.
"""

import asyncio
import gc
import logging
import multiprocessing
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from a2a_wrapper import event_loop
from a2a_wrapper.agent import RunningAgent, running_agent
from a2a_wrapper.backends.opencode.backend import OpenCodeBackend
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.frontend.edge.quiet_server import QuietServer
from a2a_wrapper.frontend.edge.server_config import uvicorn_config

START_TIMEOUT = 120.0  # seconds for the agent and its backend to come up
STOP_TIMEOUT = 30.0


class AgentProcessError(Exception):
    """The agent's process did not start, or answered what it should not."""


@dataclass(frozen=True)
class OpenCodeAccess:
    """How a direct client reaches the agent's own `opencode serve`: the same server, the same credentials."""

    base_url: str
    headers: dict[str, str]
    pid: int
    version: str


@dataclass(frozen=True)
class AgentProcess:
    url: str  # the agent's JSON-RPC endpoint
    pid: int
    opencode: OpenCodeAccess | None  # when the backend is an `opencode serve` the agent spawned
    _control: Connection

    def cpu_seconds(self) -> float:
        return thread_cpu_seconds(self.pid)

    def memory(self) -> dict[str, float]:
        """The agent process's RSS (MB) and its live Python objects, after a collection there."""
        self._control.send("memory")
        answer: dict[str, float] = self._control.recv()
        return answer


@asynccontextmanager
async def serving(agent: RunningAgent) -> AsyncIterator[str]:
    """The agent's app on uvicorn as `a2a-wrap` serves it (its connection limits included); yields its JSON-RPC URL."""
    server = QuietServer(uvicorn_config(agent.app, agent.settings.server))
    task = asyncio.create_task(server.serve(), name="bench-uvicorn")
    try:
        async with asyncio.timeout(10):
            while not server.started:  # noqa: ASYNC110 (uvicorn offers no started event)
                await asyncio.sleep(0.02)
        yield agent.settings.advertised_url + "/a2a/jsonrpc"
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def agent_process(
    settings: AgentSettings, prepare: Callable[[], None] | None = None
) -> AsyncIterator[AgentProcess]:
    """The agent served in a child process until the block ends; `prepare` (a module-level function) runs there
    first."""
    context = multiprocessing.get_context("spawn")  # a clean interpreter: nothing of the bench's loop or threads
    control, theirs = context.Pipe()
    child = context.Process(
        target=_main, args=(settings, theirs, logging.getLogger().level, prepare), name="bench-agent", daemon=True
    )
    child.start()
    theirs.close()
    loop = asyncio.get_running_loop()
    try:
        try:
            report = await asyncio.wait_for(loop.run_in_executor(None, _received, control), START_TIMEOUT)
        except TimeoutError:
            raise AgentProcessError(f"the agent did not start within {START_TIMEOUT:.0f} s") from None
        if report[0] != "ready":
            raise AgentProcessError(f"the agent failed to start: {report[1]}")
        _, url, opencode = report
        yield AgentProcess(url, child.pid or 0, opencode, control)
    finally:
        if child.is_alive():
            try:
                control.send("stop")
            except OSError:
                pass
            await loop.run_in_executor(None, child.join, STOP_TIMEOUT)
        if child.is_alive():
            child.kill()
            await loop.run_in_executor(None, child.join)
        control.close()


def thread_cpu_seconds(pid: int) -> float:
    """The CPU a process's live threads have run (/proc's schedstat: nanoseconds, not the 10 ms of its stat). A
    thread that ends between two readings takes its time with it; the agent's threads (its loop's, its executor's)
    live as long as it does."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # the thread ended meanwhile
    return total / 1e9


def _received(control: Connection) -> Any:
    try:
        return control.recv()
    except EOFError:
        return ("failed", "its process ended before it said it was ready")


# in the agent's process


def _main(settings: AgentSettings, control: Connection, log_level: int, prepare: Callable[[], None] | None) -> None:
    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s agent %(name)s: %(message)s")
    if prepare is not None:
        prepare()
    try:
        event_loop.run(_serve(settings, control))  # the loop a2a-wrap runs on
    except Exception as exc:  # told to the bench, which raises it there
        control.send(("failed", f"{type(exc).__name__}: {exc}"))
        raise


async def _serve(settings: AgentSettings, control: Connection) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_request() -> None:
        try:
            request = control.recv()
        except EOFError:  # the bench is gone
            request = "stop"
        if request == "memory":
            gc.collect()
            control.send({"rss_mb": _rss_mb(), "objects": float(len(gc.get_objects()))})
        else:
            stop.set()

    async with running_agent(settings) as agent, serving(agent) as url:
        control.send(("ready", url, await _opencode_access(agent)))
        loop.add_reader(control.fileno(), on_request)
        try:
            await stop.wait()
        finally:
            loop.remove_reader(control.fileno())


async def _opencode_access(agent: RunningAgent) -> OpenCodeAccess | None:
    backend = agent.backend
    if not isinstance(backend, OpenCodeBackend) or backend._child is None or backend._client._calls is None:
        return None
    calls = backend._client._calls
    return OpenCodeAccess(
        base_url=calls.base_url,
        headers=calls.headers,
        pid=backend._child.pid or 0,
        version=str((await backend.health()).get("version")),
    )


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
