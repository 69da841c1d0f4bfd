"""What the A2A wrapper adds on top of talking to OpenCode directly.

The wrapped agent runs in a process of its own, as `a2a-wrap` runs it (bench/agent_process.py: its
`opencode serve` child and the A2A app on uvicorn). This process runs the offline model and two clients of
the SAME OpenCode server:

- direct: `POST /session/{id}/prompt_async`, then that server's events until `session.idle`. One `/event`
  subscription is held for the whole run and routed by sessionID, as the wrapper does: OpenCode never
  releases a subscription, so one per turn would slow it down (notes/opencode.md §7).
- wrapper: a streamed A2A task (JSON-RPC `SendStreamingMessage`, `A2A-Version: 1.0`) until its final
  `TASK_STATE_COMPLETED` status update.

Each section gives each mode one fresh OpenCode session (direct) or one fresh A2A contextId (wrapper, which
then reuses one OpenCode session) and sends every turn of the section to it, so both modes carry the same
history. Measured:

1. a warm trivial turn (p50/p90, ms added, ratio);
2. time to the first text of a reply streamed as 300 deltas (`[[long:300]]`): direct to the first
   `message.part.delta` of an assistant text part, wrapper to the first `artifactUpdate`;
3. a soak: the first 30 against the last 30 turns of a long run, with the RSS of the agent's process, of
   this one and of OpenCode before and after;
4. the wrapper's delay on the very turns it wraps, free of OpenCode's own spread (its first text of a long
   reply moves by 25-113 ms within one run, more than the 2 ms goal): the direct client's `/event` stream shows
   the wrapped turns too, so this process sees when OpenCode announced the prompt (its new user message), its
   first answer delta and its `session.idle`, in both modes. Added: the time to OpenCode's announcing the prompt
   (p50, wrapper against direct), plus how long after OpenCode's first delta / `session.idle` the A2A client had
   the first artifact / the final status (p50 over the wrapped turns).

The modes are interleaved turn by turn (direct, wrapper, direct, ...) instead of run as two blocks, so
drift -- OpenCode's growing history and heap, page cache, CPU clock, other work on the machine -- lands on
both equally and the difference stays the wrapper's own cost. The soak is interleaved too: the direct
turns are its control, telling a slower OpenCode from a slower wrapper.

Each turn is followed by a short pause (`--settle`): OpenCode keeps working for 100-250 ms after
`session.idle`, and back to back that tail would always land on the next turn, i.e. on the other mode.
The CPU used over each turn and its pause, by this process, by the agent's and by OpenCode, is recorded too:
on a busy machine wall-clock times stretch, but the CPU a mode costs does not. The CPU a mode costs is this
process's and the agent's together: in direct mode the agent still reads the direct session's events
(OpenCode sends every subscriber every session's), in wrapper mode this process's direct client still skims
the wrapper's (and parses the few that item 4 needs), so each mode carries the other's reader as it did when
both ran in one process.

Both clients use aiohttp with keep-alive (no TCP set-up is timed) and the same SSE parser, the agent's own.

    /work/venv/bin/python bench/overhead.py [--turns N] [--soak N] [--json out.json]

The same comparison for every backend (OpenCode, Copilot CLI through its SDK, ACP agents), wrapper against
each backend called directly, is `--per-backend [opencode,copilot,acp-opencode,acp-copilot]` (bench/backends.py).
"""

import argparse
import asyncio
import gc
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import asdict, dataclass, field, replace
from importlib.metadata import version
from pathlib import Path
from typing import Any, cast

import aiohttp
from agent_process import AgentProcess, OpenCodeAccess, agent_process

from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.backends.opencode.sse_events import sse_data as events_of
from a2a_wrapper.config.backends import ModelProvider, OpenCodeSettings
from a2a_wrapper.config.runtimes import ProcessRuntime
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import MODEL_ID, SMALL_MODEL_ID, OfflineModel

log = logging.getLogger("bench.overhead")

TRIVIAL = "hi"
LONG = "[[long:300]]"
SOAK_WINDOW = 30
TURN_TIMEOUT = 60.0
IDLE_SEEN_TIMEOUT = 5.0  # seconds a wrapped turn waits, once over, for OpenCode's `session.idle` to be read here
V1 = {"A2A-Version": "1.0"}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}

# Targets, the (#11): a warm turn, the wrapper's CPU for it, the first text and a long reply, each against
# OpenCode called directly. Over the soak, the wrapper's added wall time is noisy on a shared machine, so a
# slowdown is judged on it with 5 ms of tolerance, and on its added CPU, which is steady, more tightly.
MAX_ADDED_MS = 3.0
MAX_ADDED_CPU_MS = 5.0
MAX_FIRST_TEXT_MS = 2.0
MAX_LONG_REPLY_RATIO = 1.2
MAX_SOAK_GROWTH_MS = 5.0
MAX_SOAK_CPU_GROWTH_MS = 1.0


class BenchError(Exception):
    """A turn did not end as a completed turn with text."""


@dataclass(frozen=True, slots=True)
class Timing:
    """One turn, in ms from sending the prompt; CPU in ms over the turn and the settle pause after it."""

    done: float  # direct: session.idle; wrapper: the TASK_STATE_COMPLETED status update
    first_text: float | None  # the first answer delta / artifactUpdate
    closed: float | None = None  # wrapper only: the end of the HTTP stream
    cpu: float | None = None  # this process (model, clients) and the agent's, all threads
    agent_cpu: float | None = None  # the agent's process alone
    opencode_cpu: float | None = None  # the OpenCode child (10 ms ticks: meaningful as a mean)
    # The same turn as OpenCode's `/event` stream told this process, in both modes: its event for the turn's user
    # message (the prompt has reached OpenCode), its first answer delta, its `session.idle`.
    backend_prompt: float | None = None
    backend_first_text: float | None = None
    backend_done: float | None = None


@dataclass
class Series:
    """The recorded turns of one section, per mode, in the order they ran."""

    direct: list[Timing] = field(default_factory=list)
    wrapper: list[Timing] = field(default_factory=list)


# SSE, shared by both clients


async def sse_payloads(response: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    async for data in sse_data(response):
        yield json.loads(data)


async def sse_data(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """Each SSE event's data, unparsed, split from the body's chunks as the agent splits OpenCode's (2.5 us an
    event, against ~10 for aiohttp's line by line): the direct client skims every event of the wrapper's session
    too, in the loop the A2A client reads the same reply in."""
    async for data in events_of(response.content.iter_any()):
        yield data


def ms(start: float, end: float | None) -> float | None:
    return None if end is None else (end - start) * 1000


# direct mode


def session_of(event: dict[str, Any]) -> str | None:
    props = event.get("properties") or {}
    for holder in (props, props.get("part") or {}, props.get("info") or {}):
        if isinstance(holder.get("sessionID"), str):
            return str(holder["sessionID"])
    return None


class FirstText:
    """When the first delta of an assistant text part arrived; a delta may precede its part's announcement."""

    def __init__(self) -> None:
        self._roles: dict[str, str] = {}  # messageID -> role
        self._parts: dict[str, tuple[str, str]] = {}  # partID -> (type, messageID)
        self._deltas: dict[str, float] = {}  # partID -> arrival of its first delta

    def feed(self, at: float, event: dict[str, Any]) -> None:
        kind, props = event.get("type"), event.get("properties") or {}
        if kind == "message.updated":
            info = props.get("info") or {}
            self._roles[info.get("id", "")] = info.get("role", "")
        elif kind == "message.part.updated":
            part = props.get("part") or {}
            self._parts[part.get("id", "")] = (part.get("type", ""), part.get("messageID", ""))
        elif kind == "message.part.delta" and props.get("field", "text") == "text":
            self._deltas.setdefault(props.get("partID", ""), at)

    def at(self) -> float | None:
        answers = [t for p, t in self._deltas.items() if self._is_answer(p)]
        return min(answers, default=None)

    def _is_answer(self, part_id: str) -> bool:
        kind, message_id = self._parts.get(part_id, ("", ""))
        return kind == "text" and self._roles.get(message_id) == "assistant"


class Prompted:
    """When OpenCode announced a new user message of a session: the prompt has reached it. Its earlier user messages
    are announced again after their turns (their summaries), so each message counts once."""

    def __init__(self, seen: set[str]) -> None:
        self._seen = seen  # the session's user messages already announced, kept across its turns
        self.at: float | None = None

    def feed(self, at: float, event: dict[str, Any]) -> None:
        info = (event.get("properties") or {}).get("info") or {}
        if event.get("type") == "message.updated" and info.get("role") == "user" and info.get("id") not in self._seen:
            self._seen.add(info.get("id", ""))
            if self.at is None:
                self.at = at


class Watch:
    """One wrapped turn as OpenCode's event stream shows it to this process, for the wrapper's delay measured on
    the very turn it wraps (OpenCode's own spread, 25-113 ms to first text within one run, cancels out). The
    wrapper's session is the one whose new user message arrives after the watch starts; once its first answer
    delta is in, only its `session.idle` is looked for, so that a 300-delta burst is not parsed here while the A2A
    client waits for the same loop."""

    def __init__(self, start: float, own: set[str], seen: set[str]) -> None:
        self._start = start
        self._own = own  # the direct client's sessions, whose late events are not this turn's
        self._session: bytes | None = None  # its id, once known
        self._prompted = Prompted(seen)
        self._first = FirstText()
        self._first_at: float | None = None
        self._idle_at: float | None = None
        self.idle = asyncio.Event()  # OpenCode's end of the turn seen here (the A2A client may have had it first)

    def feed(self, at: float, data: bytes) -> None:
        if self._idle_at is not None or (self._session is not None and self._session not in data):
            return
        if self._first_at is not None and b'"session.idle"' not in data:
            return
        event = json.loads(data)
        session = session_of(event)
        if session is None or session in self._own:
            return
        if self._session is None:
            self._prompted.feed(at, event)
            if self._prompted.at is None:
                return  # not yet the wrapped prompt: another session's tail
            self._session = session.encode()
        self._first.feed(at, event)
        if self._first_at is None:
            self._first_at = self._first.at()
        if event.get("type") == "session.idle":
            self._idle_at = at
            self.idle.set()

    def timing(self, timing: Timing) -> Timing:
        return replace(
            timing,
            backend_prompt=ms(self._start, self._prompted.at),
            backend_first_text=ms(self._start, self._first_at),
            backend_done=ms(self._start, self._idle_at),
        )


Stamped = tuple[float, dict[str, Any]]


class DirectClient:
    """OpenCode without the wrapper: one `/event` subscription for the whole run, routed by sessionID."""

    def __init__(self, http: aiohttp.ClientSession, model: str) -> None:
        self._http = http
        provider_id, _, model_id = model.partition("/")
        self._model = {"providerID": provider_id, "modelID": model_id}
        self._queues: dict[str, asyncio.Queue[Stamped]] = {}
        self._own: set[str] = set()  # every session this client made
        self._user_messages: dict[str, set[str]] = {}  # per session, its user messages OpenCode announced
        self._watch: Watch | None = None
        self.connected = asyncio.Event()

    async def listen(self) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=5)
        async with self._http.get("event", timeout=timeout) as response:
            response.raise_for_status()
            async for data in sse_data(response):
                at = time.perf_counter()
                if self.connected.is_set() and not any(session_id.encode() in data for session_id in self._queues):
                    # The wrapper's own session shares this OpenCode: a direct client of an OpenCode of its own
                    # would never see those events, and parsing a 300-delta burst here would hold up the wrapper.
                    if self._watch is not None:
                        self._watch.feed(at, data)
                    continue
                event = json.loads(data)
                if event.get("type") == "server.connected":
                    self.connected.set()
                queue = self._queues.get(session_of(event) or "")
                if queue is not None:
                    queue.put_nowait((at, event))
        raise BenchError("OpenCode closed the direct event stream")

    async def new_session(self, title: str) -> str:
        async with self._http.post("session", json={"title": title}) as response:
            response.raise_for_status()
            session_id = str((await response.json())["id"])
        self._own.add(session_id)
        return session_id

    async def watched(self, turn: Awaitable[Timing]) -> Timing:
        """A wrapped turn, with what OpenCode's event stream showed of it on the way."""
        watch = self._watch = Watch(time.perf_counter(), self._own, self._user_messages.setdefault("wrapper", set()))
        try:
            timing = await turn
            with suppress(TimeoutError):  # without it the summary names the turns OpenCode's stream did not show
                async with asyncio.timeout(IDLE_SEEN_TIMEOUT):
                    await watch.idle.wait()
            return watch.timing(timing)
        finally:
            self._watch = None

    async def turn(self, session_id: str, text: str) -> Timing:
        queue = self._queues[session_id] = asyncio.Queue()
        first = FirstText()
        prompted = Prompted(self._user_messages.setdefault(session_id, set()))
        body = {"parts": [{"type": "text", "text": text}], "model": self._model}
        try:
            start = time.perf_counter()
            async with self._http.post(f"session/{session_id}/prompt_async", json=body) as response:
                response.raise_for_status()
            while True:
                at, event = await queue.get()
                first.feed(at, event)
                prompted.feed(at, event)
                if event["type"] == "session.error":
                    raise BenchError(f"OpenCode reported {event['properties'].get('error')}")
                if event["type"] == "session.idle":
                    done, first_text = cast(float, ms(start, at)), ms(start, first.at())
                    return Timing(
                        done,
                        first_text,
                        backend_prompt=ms(start, prompted.at),
                        backend_first_text=first_text,
                        backend_done=done,
                    )
        finally:
            del self._queues[session_id]


# wrapper mode


class WrapperClient:
    """An A2A client: one streamed JSON-RPC task per turn."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self._http = http
        self._url = url

    async def turn(self, context_id: str, text: str) -> Timing:
        message = {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            "contextId": context_id,
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}}
        first = done = None
        start = time.perf_counter()
        async with self._http.post(self._url, json=body, headers=V1) as response:
            response.raise_for_status()
            async for payload in sse_payloads(response):
                at = time.perf_counter()
                result = payload.get("result")
                if result is None:
                    raise BenchError(f"the wrapper answered {payload.get('error')}")
                if first is None and "artifactUpdate" in result:
                    first = at
                state = (result.get("statusUpdate") or {}).get("status", {}).get("state")
                if state in TERMINAL:
                    if state != "TASK_STATE_COMPLETED":
                        raise BenchError(f"the task ended {state}: {result['statusUpdate']['status']}")
                    done = at
        closed = time.perf_counter()
        if done is None:
            raise BenchError("the wrapper's stream ended before the task did")
        return Timing(cast(float, ms(start, done)), ms(start, first), ms(start, closed))


# the run


@dataclass
class Modes:
    """Both clients, and what is needed to time a turn: the model's request log and OpenCode's pid."""

    direct: DirectClient
    wrapper: WrapperClient
    model: OfflineModel
    agent: AgentProcess
    opencode_pid: int
    settle: float  # seconds of quiet after each turn

    async def run(self, name: str, text: str, warmup: int, turns: int) -> Series:
        """`turns` interleaved pairs after `warmup` unrecorded ones, on a fresh session and a fresh context."""
        session_id = await self.direct.new_session(f"bench {name}")
        context_id = f"bench-{name}-{uuid.uuid4().hex[:8]}"
        series = Series()
        for index in range(warmup + turns):
            direct = await self._timed(self.direct.turn(session_id, text))
            wrapper = await self._timed(self.direct.watched(self.wrapper.turn(context_id, text)))
            if index >= warmup:
                series.direct.append(direct)
                series.wrapper.append(wrapper)
            self.model.control.clear()  # its log of every request would otherwise grow this process's memory
        return series

    async def _timed(self, turn: Awaitable[Timing]) -> Timing:
        cpu, agent_cpu = time.process_time(), self.agent.cpu_seconds()
        opencode_cpu = cpu_seconds(self.opencode_pid)
        async with asyncio.timeout(TURN_TIMEOUT):
            timing = await turn
        # OpenCode works on for 100-250 ms after session.idle (session.diff and more); without this pause
        # that tail would land on the next turn, always of the other mode, and the wrapper's own post-idle
        # work would hide part of it.
        await asyncio.sleep(self.settle)
        agent_cpu = self.agent.cpu_seconds() - agent_cpu
        return replace(
            timing,
            cpu=(time.process_time() - cpu + agent_cpu) * 1000,
            agent_cpu=agent_cpu * 1000,
            opencode_cpu=(cpu_seconds(self.opencode_pid) - opencode_cpu) * 1000,
        )


def cpu_seconds(pid: int) -> float:
    """User plus system CPU of a process, from /proc (10 ms resolution)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise BenchError(f"no VmRSS for pid {pid}")


def memory(agent: AgentProcess, opencode_pid: int) -> dict[str, float]:
    gc.collect()
    theirs = agent.memory()
    return {
        "agent_rss_mb": theirs["rss_mb"],
        "agent_objects": theirs["objects"],
        "python_rss_mb": rss_mb(),
        "opencode_rss_mb": rss_mb(opencode_pid),
    }


async def measure(modes: Modes, args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "turns": args.turns,
        "warmup": args.warmup,
        "first_text_runs": args.first_text_runs,
        "settle_s": args.settle,
    }
    log.info("warm trivial turns: %d + %d warm-up", args.turns, args.warmup)
    results["warm"] = await modes.run("warm", TRIVIAL, args.warmup, args.turns)
    log.info("first text: %d runs", args.first_text_runs)
    results["first_text"] = await modes.run("first-text", LONG, 2, args.first_text_runs)
    log.info("soak: %d turns", args.soak)
    results["memory_before"] = memory(modes.agent, modes.opencode_pid)
    results["soak"] = await modes.run("soak", TRIVIAL, 0, args.soak)
    results["memory_after"] = memory(modes.agent, modes.opencode_pid)
    results["soak_turns"] = args.soak
    return results


# the agent


def agent_settings(model: OfflineModel, state: Path) -> AgentSettings:
    return AgentSettings(
        card=CardSettings(name="bench"),
        server=ServerSettings(port=free_port()),
        backend=OpenCodeSettings(
            binary=find_binary("opencode"),
            workdir=state / "workspace",
            model=f"offline/{MODEL_ID}",
            provider=ModelProvider(id="offline", base_url=model.base_url, models=[MODEL_ID, SMALL_MODEL_ID]),
        ),
        state_dir=state,
        runtime=ProcessRuntime(),  # the wrapper alone, on a server the direct client dials; see bench/sandbox.py
        auto_approve=True,
    )


@asynccontextmanager
async def listening(direct: DirectClient) -> AsyncIterator[None]:
    task = asyncio.create_task(direct.listen(), name="bench-direct-events")
    try:
        connected = asyncio.create_task(direct.connected.wait())
        await asyncio.wait({task, connected}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        connected.cancel()
        if task.done():
            task.result()  # the stream failed at once: raise its error
        if not direct.connected.is_set():
            raise BenchError("the direct event stream did not connect within 10 s")
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="a2a-bench-")))
        model = await stack.enter_async_context(OfflineModel())
        settings = agent_settings(model, state)
        agent = await stack.enter_async_context(agent_process(settings))
        if agent.opencode is None:
            raise BenchError("the agent reported no OpenCode server of its own")
        served = await stack.enter_async_context(opencode_session(agent.opencode))
        direct = DirectClient(served, settings.backend.model)
        await stack.enter_async_context(listening(direct))
        http = await stack.enter_async_context(aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)))
        host = machine(agent.opencode.version)
        modes = Modes(direct, WrapperClient(http, agent.url), model, agent, agent.opencode.pid, args.settle)
        return {"machine": host, **await measure(modes, args)}


def opencode_session(access: OpenCodeAccess) -> aiohttp.ClientSession:
    """A session of this process's own with the agent's OpenCode, on the agent's address and credentials."""
    return aiohttp.ClientSession(
        base_url=access.base_url, headers=access.headers, timeout=aiohttp.ClientTimeout(total=30, sock_connect=5)
    )


def machine(opencode_version: str) -> dict[str, str]:
    return {
        "cores": str(os.cpu_count()),
        "cpu": cpu_model(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "opencode": opencode_version,
        "a2a_sdk": version("a2a-sdk"),
        "load": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
    }


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


# the report


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def done_ms(timings: list[Timing]) -> list[float]:
    return [t.done for t in timings]


def first_ms(timings: list[Timing]) -> list[float]:
    missing = sum(t.first_text is None for t in timings)
    if missing:
        raise BenchError(f"{missing} turns streamed no text")
    return [cast(float, t.first_text) for t in timings]


def measured(timings: list[Timing], name: str) -> list[float]:
    missing = sum(getattr(t, name) is None for t in timings)
    if missing:
        raise BenchError(f"OpenCode's event stream did not show {name} for {missing} turns")
    return [cast(float, getattr(t, name)) for t in timings]


def behind_opencode(timings: list[Timing], name: str, backend_name: str) -> float:
    """p50 over the wrapped turns: how long after OpenCode's event the A2A client had the same news."""
    return pct([a - b for a, b in zip(measured(timings, name), measured(timings, backend_name), strict=True)], 50)


def mean_of(timings: list[Timing], name: str) -> float:
    return statistics.fmean(cast(float, getattr(t, name)) for t in timings)


def compare(direct: float, wrapper: float) -> dict[str, float]:
    return {"direct": direct, "wrapper": wrapper, "added": wrapper - direct, "ratio": wrapper / direct}


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    warm, first, soak = results["warm"], results["first_text"], results["soak"]
    window = min(SOAK_WINDOW, len(soak.direct) // 2)

    def p50(timings: list[Timing]) -> float:
        return pct(done_ms(timings), 50)

    rows: dict[str, Any] = {
        "warm_p50": compare(p50(warm.direct), p50(warm.wrapper)),
        "warm_p90": compare(pct(done_ms(warm.direct), 90), pct(done_ms(warm.wrapper), 90)),
        "warm_cpu": compare(mean_of(warm.direct, "cpu"), mean_of(warm.wrapper, "cpu")),
        "warm_agent_cpu": compare(mean_of(warm.direct, "agent_cpu"), mean_of(warm.wrapper, "agent_cpu")),
        "warm_opencode_cpu": compare(mean_of(warm.direct, "opencode_cpu"), mean_of(warm.wrapper, "opencode_cpu")),
        "first_text_p50": compare(pct(first_ms(first.direct), 50), pct(first_ms(first.wrapper), 50)),
        "long_turn_p50": compare(p50(first.direct), p50(first.wrapper)),
        "soak_first_p50": compare(p50(soak.direct[:window]), p50(soak.wrapper[:window])),
        "soak_last_p50": compare(p50(soak.direct[-window:]), p50(soak.wrapper[-window:])),
        "soak_first_cpu": compare(mean_of(soak.direct[:window], "cpu"), mean_of(soak.wrapper[:window], "cpu")),
        "soak_last_cpu": compare(mean_of(soak.direct[-window:], "cpu"), mean_of(soak.wrapper[-window:], "cpu")),
        "wrapper_stream_end_p50": pct([cast(float, t.closed) - t.done for t in warm.wrapper], 50),
        "soak_window": window,
    }
    # The wrapper's delay on the turns it wraps: handing the prompt to OpenCode (against the direct client's doing
    # the same), then passing on OpenCode's news. Each summand is free of OpenCode's own spread in time to answer.
    rows["prompt_warm"] = compare(
        pct(measured(warm.direct, "backend_prompt"), 50), pct(measured(warm.wrapper, "backend_prompt"), 50)
    )
    rows["prompt_first"] = compare(
        pct(measured(first.direct, "backend_prompt"), 50), pct(measured(first.wrapper, "backend_prompt"), 50)
    )
    rows["behind_idle"] = behind_opencode(warm.wrapper, "done", "backend_done")
    rows["behind_first_text"] = behind_opencode(first.wrapper, "first_text", "backend_first_text")
    rows["paired_warm_added"] = rows["prompt_warm"]["added"] + rows["behind_idle"]
    rows["paired_first_text_added"] = rows["prompt_first"]["added"] + rows["behind_first_text"]
    rows["soak_growth_ms"] = rows["soak_last_p50"]["added"] - rows["soak_first_p50"]["added"]
    rows["soak_cpu_growth_ms"] = rows["soak_last_cpu"]["added"] - rows["soak_first_cpu"]["added"]
    rows["pass"] = {
        "added_per_turn": rows["warm_p50"]["added"] <= MAX_ADDED_MS,
        "cpu_per_turn": rows["warm_cpu"]["added"] <= MAX_ADDED_CPU_MS,
        "first_text": rows["first_text_p50"]["added"] <= MAX_FIRST_TEXT_MS,
        "long_reply": rows["long_turn_p50"]["ratio"] <= MAX_LONG_REPLY_RATIO,
        "soak": rows["soak_growth_ms"] <= MAX_SOAK_GROWTH_MS and rows["soak_cpu_growth_ms"] <= MAX_SOAK_CPU_GROWTH_MS,
    }
    return rows


def render(results: dict[str, Any], summary: dict[str, Any]) -> str:
    m, ok, w = results["machine"], summary["pass"], summary["soak_window"]

    def row(label: str, key: str, target: str = "", passed: bool | None = None) -> str:
        r = summary[key]
        result = "" if passed is None else ("**pass**" if passed else "**FAIL**")
        return (
            f"| {label} | {r['direct']:.1f} | {r['wrapper']:.1f} | {r['added']:+.1f} | {r['ratio']:.2f}x "
            f"| {target} | {result} |"
        )

    growth = (
        f"no slowdown: added ms grows under {MAX_SOAK_GROWTH_MS:g} (here {summary['soak_growth_ms']:+.1f}) "
        f"and added CPU ms under {MAX_SOAK_CPU_GROWTH_MS:g} (here {summary['soak_cpu_growth_ms']:+.1f})"
    )
    lines = [
        f"Machine: {m['cores']} cores ({m['cpu']}), {m['os']}, load average {m['load']} at the start; "
        f"Python {m['python']}, OpenCode {m['opencode']}, a2a-sdk {m['a2a_sdk']}.",
        f"Direct and wrapper turns interleaved, {results['settle_s']:g} s pause after each: "
        f"{results['turns']} trivial turns per mode (after {results['warmup']} warm-ups), "
        f"{results['first_text_runs']} long replies, {results['soak_turns']} soak turns. Times in ms.",
        "",
        "| measure | direct | wrapper | added | ratio | target | result |",
        "|---|---:|---:|---:|---:|---|---|",
        row("warm trivial turn, p50", "warm_p50", f"at most {MAX_ADDED_MS:g} ms added", ok["added_per_turn"]),
        row("warm trivial turn, p90", "warm_p90"),
        row(
            "CPU per trivial turn, this process and the agent's (mean)",
            "warm_cpu",
            f"at most {MAX_ADDED_CPU_MS:g} ms added",
            ok["cpu_per_turn"],
        ),
        row("CPU per trivial turn, the agent's process alone (mean)", "warm_agent_cpu"),
        row("CPU per trivial turn, OpenCode (mean)", "warm_opencode_cpu"),
        row(
            "first text of a 300-delta reply, p50",
            "first_text_p50",
            f"within {MAX_FIRST_TEXT_MS:g} ms of direct",
            ok["first_text"],
        ),
        row("whole 300-delta reply, p50", "long_turn_p50", f"at most {MAX_LONG_REPLY_RATIO:g}x", ok["long_reply"]),
        row(f"soak, first {w} turns, p50", "soak_first_p50"),
        row(f"soak, last {w} turns, p50", "soak_last_p50"),
        row(f"CPU per soak turn, this process and the agent's, first {w} (mean)", "soak_first_cpu"),
        row(f"CPU per soak turn, this process and the agent's, last {w} (mean)", "soak_last_cpu", growth, ok["soak"]),
        "",
        "| memory over the soak | before | after | change |",
        "|---|---:|---:|---:|",
        *memory_rows(results["memory_before"], results["memory_after"]),
        "",
        f"The wrapper's HTTP stream closes {summary['wrapper_stream_end_p50']:.1f} ms (p50) after its final status.",
        "",
        "The wrapper's delay on the turns it wraps, from OpenCode's event stream read here in both modes (p50, ms):",
        "",
        "| | trivial turn | first text of a 300-delta reply |",
        "|---|---:|---:|",
        f"| from sending to OpenCode's announcing the prompt: direct / wrapper / added | "
        f"{_triple(summary['prompt_warm'])} | {_triple(summary['prompt_first'])} |",
        f"| from OpenCode's event (`session.idle` / the first answer delta) to the A2A client's (< 0: it came first) "
        "| "
        f"{summary['behind_idle']:+.1f} | {summary['behind_first_text']:+.1f} |",
        f"| the wrapper's delay, the two together | {summary['paired_warm_added']:+.1f} "
        f"| {summary['paired_first_text_added']:+.1f} |",
    ]
    return "\n".join(lines)


def _triple(row: dict[str, float]) -> str:
    return f"{row['direct']:.1f} / {row['wrapper']:.1f} / {row['added']:+.1f}"


def memory_rows(before: dict[str, float], after: dict[str, float]) -> list[str]:
    labels = {
        "agent_rss_mb": ("the agent's process, RSS MB", "{:.1f}"),
        "agent_objects": ("the agent's live Python objects (after gc)", "{:.0f}"),
        "opencode_rss_mb": ("OpenCode, RSS MB", "{:.1f}"),
        "python_rss_mb": ("this process (model, clients), RSS MB", "{:.1f}"),
    }
    return [
        f"| {label} | {fmt.format(before[key])} | {fmt.format(after[key])} | {fmt.format(after[key] - before[key])} |"
        for key, (label, fmt) in labels.items()
    ]


def dump(results: dict[str, Any], summary: dict[str, Any], path: Path) -> None:
    raw = {k: asdict(v) if isinstance(v, Series) else v for k, v in results.items()}
    path.write_text(json.dumps({**raw, "summary": summary}, indent=2))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=50, help="warm trivial turns per mode (default 50)")
    parser.add_argument("--warmup", type=int, default=5, help="unrecorded warm-up turns per mode (default 5)")
    parser.add_argument("--first-text-runs", type=int, default=20, help="long replies per mode (default 20)")
    parser.add_argument("--soak", type=int, default=300, help="soak turns per mode (default 300)")
    parser.add_argument("--settle", type=float, default=0.25, help="pause after each turn, s (default 0.25)")
    parser.add_argument("--json", type=Path, help="write the raw numbers here")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress at INFO")
    parser.add_argument(
        "--per-backend",
        nargs="?",
        const="opencode,copilot,acp-opencode,acp-copilot",
        help="instead: a trivial turn and first text per backend, wrapper vs direct (bench/backends.py)",
    )
    args = parser.parse_args(argv)
    if min(args.turns, args.first_text_runs, args.soak) < 2:
        parser.error("--turns, --first-text-runs and --soak need at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.per_backend:
        import backends

        return backends.main(["--backends", args.per_backend, "--turns", str(args.turns), "--warmup", str(args.warmup)])
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    results = asyncio.run(bench(args))
    summary = summarise(results)
    print(render(results, summary))
    if args.json:
        dump(results, summary, args.json)
    return 0 if all(summary["pass"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
