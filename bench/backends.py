"""Per backend: what the wrapper adds to a turn and to the first text, against the backend called directly.

For each backend (opencode, copilot, acp-opencode, acp-copilot) the wrapped agent (A2A app on uvicorn, its
backend child) runs in a process of its own, as `a2a-wrap` runs it (bench/agent_process.py), and this process
runs the offline model, the A2A client and a direct client of the same kind of backend:

- opencode: the same `opencode serve` the agent spawned, over HTTP + `/event` (bench/overhead.py's client);
- copilot: a second Copilot CLI driven by github-copilot-sdk with the agent's own environment and provider;
- acp-*: a second agent process over ACP (PyPI agent-client-protocol) with the agent's command and environment.

Turns are interleaved (direct, wrapper, direct, ...) on one session / one context each, after warm-up turns,
each followed by a quiet pause (`--settle`, as in bench/overhead.py).
Measured per backend: a trivial turn (p50, ms added, ratio), the first text and the whole of a 300-delta reply
(`[[long:300]]`), and the CPU this process and the agent's spent per turn of each kind (the model and the
clients are in this one in both modes, so the difference is the wrapper's). bench/overhead.py remains the deep
look at OpenCode (soak, memory).

    /work/venv/bin/python bench/backends.py [--turns N] [--backends opencode,copilot] [--json out.json]
"""

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from agent_process import AgentProcess, OpenCodeAccess, agent_process
from overhead import DirectClient, Timing, WrapperClient, compare, opencode_session, pct

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import OpenCodeSettings
from a2a_wrapper.config.runtimes import ProcessRuntime
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import OfflineModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.helpers.acp_fixtures import acp_copilot_backend, acp_opencode_backend
from tests.helpers.behaviour import opencode_section
from tests.helpers.copilot_fixtures import copilot_backend

log = logging.getLogger("bench.backends")

TRIVIAL = "hi"
LONG = "[[long:300]]"
TURN_TIMEOUT = 120.0
SECTIONS: dict[str, Callable[[OfflineModel, Path, Path], dict[str, Any]]] = {
    "opencode": opencode_section,
    "copilot": lambda model, workdir, state: copilot_backend(model, workdir),
    "acp-opencode": acp_opencode_backend,
    "acp-copilot": acp_copilot_backend,
}


class Direct(Protocol):
    async def turn(self, text: str) -> Timing: ...


# direct clients


class DirectOpenCode:
    """The agent's own `opencode serve`, one session, without the wrapper in between."""

    def __init__(self, client: DirectClient, session_id: str) -> None:
        self._client = client
        self._session = session_id

    async def turn(self, text: str) -> Timing:
        return await self._client.turn(self._session, text)


@asynccontextmanager
async def direct_opencode(access: OpenCodeAccess, model: str) -> AsyncIterator[Direct]:
    """The agent's own server, on its address and credentials (the agent reported them)."""
    async with opencode_session(access) as http:
        client = DirectClient(http, model)
        listener = asyncio.create_task(client.listen())
        try:
            await asyncio.wait_for(client.connected.wait(), 10)
            yield DirectOpenCode(client, await client.new_session("bench direct"))
        finally:
            listener.cancel()


class DirectCopilot:
    """A Copilot CLI of its own, driven by github-copilot-sdk as the adapter drives it."""

    def __init__(self, session: Any) -> None:
        self._session = session

    async def turn(self, text: str) -> Timing:
        from copilot.generated.session_events import SessionEventType

        done = asyncio.get_running_loop().create_future()
        first: list[float] = []

        def on_event(event: Any) -> None:
            at = time.perf_counter()
            if event.type is SessionEventType.ASSISTANT_MESSAGE_DELTA and not first:
                first.append(at)
            elif event.type is SessionEventType.SESSION_ERROR and not done.done():
                done.set_exception(RuntimeError(str(event.data)))
            elif event.type is SessionEventType.SESSION_IDLE and not done.done():
                done.set_result(at)

        unsubscribe = self._session.on(on_event)
        try:
            start = time.perf_counter()
            await self._session.send(text)
            end = await done
        finally:
            unsubscribe()
        return Timing((end - start) * 1000, (first[0] - start) * 1000 if first else None)


@asynccontextmanager
async def direct_copilot(agent: AgentSettings, state: Path) -> AsyncIterator[Direct]:
    from copilot import CopilotClient, RuntimeConnection
    from copilot.generated.rpc import PermissionDecisionApproveOnce

    from a2a_wrapper.backends.copilot import launch

    settings = agent.backend
    plan = launch.prepare(settings.binary, settings, state, dict(os.environ))
    client = CopilotClient(
        connection=RuntimeConnection.for_stdio(path=str(plan.binary)),
        working_directory=str(settings.workdir),
        env=plan.env,
        base_directory=str(plan.copilot_home),
        use_logged_in_user=False,
    )
    await client.start()
    try:
        session = await client.create_session(
            on_permission_request=lambda request, invocation: PermissionDecisionApproveOnce(),
            **launch.session_options(settings),
        )
        yield DirectCopilot(session)
    finally:
        await client.stop()


class DirectAcp:
    def __init__(self, conn: Any, session_id: str, client: "BenchAcpClient") -> None:
        self._conn = conn
        self._session = session_id
        self._client = client

    async def turn(self, text: str) -> Timing:
        from acp import text_block

        self._client.first = None
        start = time.perf_counter()
        await self._conn.prompt(session_id=self._session, prompt=[text_block(text)])
        end = time.perf_counter()
        first = self._client.first
        return Timing((end - start) * 1000, (first - start) * 1000 if first else None)


class BenchAcpClient:
    """The least an ACP client must do: note the first message chunk, allow every tool call once."""

    first: float | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.first is None and getattr(update, "session_update", "") == "agent_message_chunk":
            self.first = time.perf_counter()

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        once = next(option for option in options if option.kind == "allow_once")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=once.option_id))

    def on_connect(self, conn: Any) -> None:
        pass


@asynccontextmanager
async def direct_acp(agent: AgentSettings, state: Path) -> AsyncIterator[Direct]:
    from acp import PROTOCOL_VERSION
    from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation
    from acp.stdio import spawn_agent_process

    from a2a_wrapper.backends.acp.launch import agent_env

    settings = agent.backend
    client = BenchAcpClient()
    env = agent_env(settings, state, dict(os.environ))
    program, *arguments = settings.command
    async with spawn_agent_process(client, program, *arguments, env=env, cwd=str(settings.workdir)) as (conn, _):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
            ),
            client_info=Implementation(name="bench", version="0"),
        )
        session = await conn.new_session(cwd=str(settings.workdir), mcp_servers=[])
        yield DirectAcp(conn, session.session_id, client)


# the run


@dataclass
class Result:
    backend: str
    trivial_direct: list[float] = field(default_factory=list)
    trivial_wrapper: list[float] = field(default_factory=list)
    first_direct: list[float] = field(default_factory=list)
    first_wrapper: list[float] = field(default_factory=list)
    long_direct: list[float] = field(default_factory=list)
    long_wrapper: list[float] = field(default_factory=list)
    cpu_trivial_direct: list[float] = field(default_factory=list)
    cpu_trivial_wrapper: list[float] = field(default_factory=list)
    cpu_long_direct: list[float] = field(default_factory=list)
    cpu_long_wrapper: list[float] = field(default_factory=list)


async def timed(turn: Awaitable[Timing], settle: float, agent: AgentProcess | None = None) -> Timing:
    """The turn, then a quiet pause: a backend works on after its turn ends (OpenCode 100-250 ms), and without
    the pause that tail would land on the next turn, always of the other mode. CPU is this process's over both,
    and the agent's when it has a process of its own."""
    cpu = time.process_time()
    agent_cpu = agent.cpu_seconds() if agent else 0.0
    async with asyncio.timeout(TURN_TIMEOUT):
        timing = await turn
    await asyncio.sleep(settle)
    agent_cpu = agent.cpu_seconds() - agent_cpu if agent else 0.0
    return replace(timing, cpu=(time.process_time() - cpu + agent_cpu) * 1000, agent_cpu=agent_cpu * 1000)


def wrapped_settings(name: str, model: OfflineModel, state: Path) -> AgentSettings:
    """The wrapped agent of backend `name`, its state in `state`."""
    return AgentSettings(
        card=CardSettings(name=f"bench-{name}"),
        server=ServerSettings(port=free_port()),
        backend=SECTIONS[name](model, state / "workspace", state),
        state_dir=state,
        runtime=ProcessRuntime(),  # the direct clients run unsandboxed too; bench/sandbox.py measures the sandbox
        auto_approve=True,
    )


async def bench_backend(name: str, model: OfflineModel, turns: int, warmup: int, settle: float) -> Result:
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as folder:
        state = Path(folder) / "agent"
        settings = wrapped_settings(name, model, state)
        result = Result(name)
        async with AsyncExitStack() as stack:
            agent = await stack.enter_async_context(agent_process(settings))
            http = await stack.enter_async_context(aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)))
            wrapper = WrapperClient(http, agent.url)
            direct_state = Path(folder) / "direct"
            if name == "opencode":
                assert agent.opencode is not None and isinstance(settings.backend, OpenCodeSettings)
                direct = await stack.enter_async_context(direct_opencode(agent.opencode, settings.backend.model))
            elif name == "copilot":
                direct = await stack.enter_async_context(direct_copilot(settings, direct_state))
            else:
                direct = await stack.enter_async_context(direct_acp(settings, direct_state))
            context = f"bench-{uuid.uuid4().hex[:8]}"
            for text, kind in ((TRIVIAL, "trivial"), (LONG, "long")):
                for index in range(warmup + turns):
                    direct_timing = await timed(direct.turn(text), settle, agent)
                    wrapper_timing = await timed(wrapper.turn(context, text), settle, agent)
                    if index >= warmup:
                        record(result, kind, "direct", direct_timing)
                        record(result, kind, "wrapper", wrapper_timing)
                    model.control.clear()
        return result


def record(result: Result, kind: str, mode: str, timing: Timing) -> None:
    """One turn's figures into the result's lists: a trivial turn's end; a long reply's first text and end."""
    getattr(result, f"cpu_{kind}_{mode}").append(timing.cpu)
    if kind == "trivial":
        getattr(result, f"trivial_{mode}").append(timing.done)
    else:
        getattr(result, f"first_{mode}").append(timing.first_text)
        getattr(result, f"long_{mode}").append(timing.done)


MEASURES = {  # summary key: (Result list prefix, table heading)
    "trivial_p50": ("trivial", "trivial turn"),
    "first_text_p50": ("first", "first text of 300 deltas"),
    "long_p50": ("long", "whole 300-delta reply"),
    "cpu_trivial_p50": ("cpu_trivial", "CPU per trivial turn"),
    "cpu_long_p50": ("cpu_long", "CPU per 300-delta turn"),
}


def summarise(result: Result) -> dict[str, Any]:
    summary: dict[str, Any] = {"backend": result.backend}
    for key, (prefix, _) in MEASURES.items():
        direct, wrapper = getattr(result, f"{prefix}_direct"), getattr(result, f"{prefix}_wrapper")
        summary[key] = compare(pct(direct, 50), pct(wrapper, 50))
    return summary


def render(rows: list[dict[str, Any]]) -> str:
    """One table per backend: each measure's p50 direct, wrapped, added and ratio (ms)."""
    lines = []
    for row in rows:
        lines += [
            f"{row['backend']}:",
            "| measure (p50) | direct | wrapper | added | ratio |",
            "|---|---:|---:|---:|---:|",
        ]
        for key, (_, heading) in MEASURES.items():
            m = row[key]
            lines.append(
                f"| {heading} | {m['direct']:.1f} | {m['wrapper']:.1f} | {m['added']:+.1f} | {m['ratio']:.2f}x |"
            )
        lines.append("")
    return "\n".join(lines)


async def run_all(args: argparse.Namespace) -> list[Result]:
    results = []
    async with OfflineModel() as model:
        for name in args.backends.split(","):
            log.info("benchmarking %s", name)
            results.append(await bench_backend(name, model, args.turns, args.warmup, args.settle))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--settle", type=float, default=0.25, help="pause after each turn, s")
    parser.add_argument("--backends", default=",".join(SECTIONS))
    parser.add_argument("--json")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper())
    results = asyncio.run(run_all(args))
    rows = [summarise(result) for result in results]
    print(render(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": rows, "raw": [asdict(r) for r in results]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
