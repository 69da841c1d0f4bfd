"""What a streamed trivial turn costs the A2A side alone: its HTTP stack by itself, a2a-sdk, a2a-sdk with the agent's
layers over it, and the whole agent, each with a backend that answers at once.

bench/overhead.py and bench/backends.py time the wrapper against its backend called directly, so all of the A2A
side counts as added there (over ACP, whose direct client does little, nearly all of the agent's work). This bench
splits that share: what a2a-sdk 1.3.0 itself takes (the front end DESIGN.md names), what the agent's layers over
it (frontend/compat/) leave of that, and what the agent's own features add (connection and message limits,
retries that run once, tasks written to SQLite, the guard, metrics):

- starlette: uvicorn and Starlette alone, on the agent's event loop: the request's body parsed, the five events the
  agent's turn sends (the task, `working`, the answer as a chunk and a last chunk, `completed`) written with orjson,
  nothing kept: about the least a streamed turn can cost on this HTTP stack, with no task store and no checks;
- sdk: a2a-sdk's DefaultRequestHandler, in-memory task store and JSON-RPC routes on uvicorn, on the agent's event
  loop; its executor answers at once with the same five events;
- sdk+layers: the same, after the agent's layers over the SDK are installed, as the agent installs them
  (frontend/compat/__init__.py);
- agent: the agent as `a2a-wrap` serves it (bench/agent_process.py), on a backend that answers "ok" at once.

Each server has a process of its own. One A2A client (bench/overhead.py's) streams trivial turns on one context,
first back to back, then each followed by a pause (`--settle`, as the other benches pause): after a pause every
server's figures grow, the bare stack's too (on this VM 1.7-4 times for the same work, most likely on cold caches).
Printed per server and pacing: the server's CPU a turn (all its threads, from /proc, in ns) and the turn's p50 at the
client.

    .venv/bin/python bench/sdk_floor.py [--turns 300] [--paused-turns 100] [--settle 0.1]
"""

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvicorn
from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Task, TaskState, TaskStatus
from agent_process import agent_process, thread_cpu_seconds
from backends import wrapped_settings
from overhead import TRIVIAL, WrapperClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from a2a_wrapper import event_loop
from a2a_wrapper.backends.base import Capabilities, Health, Prompt, Session
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.events import Done, Text, Usage
from a2a_wrapper.frontend import compat
from a2a_wrapper.offline_model import OfflineModel

WARMUP = 50  # unrecorded turns first: imports, caches and the task store's first writes
START_TIMEOUT = 30.0  # seconds for a server without the agent to answer its first request
SERVERS = ("starlette", "sdk", "sdk+layers", "agent")


@dataclass(frozen=True)
class Figures:
    cpu_ms: float  # the server's CPU a turn
    turn_p50_ms: float


# a backend that answers at once, for the agent


class InstantTurn:
    """What a trivial turn of a real backend reports, with nothing waited for: the answer, usage, done."""

    def __aiter__(self) -> AsyncIterator[tuple[Any, ...]]:
        return self._batches()

    async def _batches(self) -> AsyncIterator[tuple[Any, ...]]:
        yield (Text(delta="ok"),)
        yield (Usage(input_tokens=3, output_tokens=1), Done(outcome="completed"))

    async def reply(self, permission_id: str, decision: str, reason: str) -> None:
        pass

    async def answer(self, question_id: str, text: str | None) -> None:
        pass

    async def abort(self) -> None:
        pass


class InstantBackend:
    kind = "acp"
    capabilities = Capabilities(questions=False, deny_reason=False, resume=False)
    restarts = 0

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def health(self) -> Health:
        return {"kind": self.kind, "restarts": 0, "healthy": True}

    async def open_session(self, context_key: str, resume: str | None = None) -> Session:
        return Session(id=f"instant-{uuid.uuid4().hex}", created=True)

    async def close_session(self, session_id: str) -> None:
        pass

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        return 0

    def turn(self, session: Session, prompt: Prompt) -> InstantTurn:
        return InstantTurn()


def use_instant_backend() -> None:
    """In the agent's process, before it starts: its backend is an InstantBackend, whatever the config says."""
    from a2a_wrapper import agent

    agent.create_backend = lambda settings, sandbox=None: InstantBackend()  # type: ignore[assignment, return-value]


# the servers without the agent, each in a child process until it is killed


def serve(name: str, port: int) -> None:
    app = starlette_alone() if name == "starlette" else sdk_alone(port, layered=name == "sdk+layers")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    event_loop.run(server.serve())


def starlette_alone() -> Starlette:
    """The JSON-RPC body parsed and the turn's five events written, as plain dicts: no SDK, no store, no checks."""

    async def stream(request: Request) -> StreamingResponse:
        body = orjson.loads(await request.body())
        message, request_id = body["params"]["message"], body.get("id")
        ids = {"taskId": uuid.uuid4().hex, "contextId": message.get("contextId") or uuid.uuid4().hex}
        task = {"id": ids["taskId"], "contextId": ids["contextId"], "history": [message]}
        answer = [({"text": "ok"}, {"lastChunk": False}), ({"text": ""}, {"append": True, "lastChunk": True})]
        results = [
            {"task": {**task, "status": {"state": "TASK_STATE_SUBMITTED"}}},
            {"statusUpdate": {**ids, "status": {"state": "TASK_STATE_WORKING"}}},
            *(
                {"artifactUpdate": {**ids, "artifact": {"artifactId": "response", "parts": [part]}, **how}}
                for part, how in answer
            ),
            {"statusUpdate": {**ids, "status": {"state": "TASK_STATE_COMPLETED"}}},
        ]

        async def events() -> AsyncIterator[bytes]:
            for result in results:
                yield b"data: " + orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + b"\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/", stream, methods=["POST"])])


def sdk_alone(port: int, layered: bool) -> Starlette:
    """a2a-sdk's own server, answering on `port`."""

    if layered:
        compat.install()

    class Answer(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            assert context.task_id is not None and context.context_id is not None and context.message is not None
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            if context.current_task is None:
                submitted = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
                await event_queue.enqueue_event(
                    Task(id=context.task_id, context_id=context.context_id, status=submitted, history=[context.message])
                )
            await updater.start_work()
            await updater.add_artifact([new_text_part("ok")], artifact_id="response", last_chunk=False)
            await updater.add_artifact([new_text_part("")], artifact_id="response", append=True, last_chunk=True)
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise NotImplementedError

    card = AgentCard(
        name="sdk",
        description="a2a-sdk alone",
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[
            AgentInterface(url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="answer", name="answer", description="Answers at once.", tags=["bench"])],
    )
    handler = DefaultRequestHandler(agent_executor=Answer(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True))


@asynccontextmanager
async def child_server(name: str) -> AsyncIterator[tuple[str, int]]:
    """A server without the agent in a process of its own: its URL and pid."""
    port = free_port()
    child = multiprocessing.get_context("spawn").Process(target=serve, args=(name, port), daemon=True)
    child.start()
    try:
        url = f"http://127.0.0.1:{port}/"
        await _answering(url, child)
        yield url, child.pid or 0
    finally:
        child.kill()
        await asyncio.get_running_loop().run_in_executor(None, child.join)


async def _answering(url: str, child: Any) -> None:
    async with aiohttp.ClientSession() as http, asyncio.timeout(START_TIMEOUT):
        while True:
            if not child.is_alive():
                raise RuntimeError(f"the server ended with code {child.exitcode} before it answered")
            try:
                async with http.get(url):  # any answer: it serves
                    return
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)


# the run


async def measure(url: str, pid: int, turns: int, settle: float) -> Figures:
    """`turns` streamed trivial turns on one context, each followed by `settle` s of quiet."""
    async with aiohttp.ClientSession() as http:
        client = WrapperClient(http, url)
        context = f"floor-{uuid.uuid4().hex[:8]}"
        for _ in range(WARMUP):
            await client.turn(context, TRIVIAL)
        walls = []
        cpu = thread_cpu_seconds(pid)
        for _ in range(turns):
            walls.append((await client.turn(context, TRIVIAL)).done)
            if settle:
                await asyncio.sleep(settle)
        cpu = thread_cpu_seconds(pid) - cpu
    return Figures(cpu * 1000 / turns, statistics.median(walls))


@asynccontextmanager
async def server(name: str, folder: Path) -> AsyncIterator[tuple[str, int]]:
    if name == "agent":
        async with AsyncExitStack() as stack:
            model = await stack.enter_async_context(OfflineModel())  # the config names one; nothing calls it
            settings = wrapped_settings("acp-opencode", model, folder / "agent")
            agent = await stack.enter_async_context(agent_process(settings, prepare=use_instant_backend))
            yield agent.url, agent.pid
    else:
        async with child_server(name) as served:
            yield served


async def run(args: argparse.Namespace) -> dict[str, tuple[Figures, Figures]]:
    results = {}
    with tempfile.TemporaryDirectory(prefix="a2a-floor-") as folder:
        for name in SERVERS:
            async with server(name, Path(folder)) as (url, pid):
                back_to_back = await measure(url, pid, args.turns, 0.0)
                paused = await measure(url, pid, args.paused_turns, args.settle)
            results[name] = (back_to_back, paused)
            print(f"{name}: done", file=sys.stderr)
    return results


def table(results: dict[str, tuple[Figures, Figures]], settle: float) -> str:
    rows = [
        f"| server | back to back: CPU a turn | turn p50 | after {settle:g} s: CPU a turn | turn p50 |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, (warm, cold) in results.items():
        rows.append(
            f"| {name} | {warm.cpu_ms:.2f} | {warm.turn_p50_ms:.2f} | {cold.cpu_ms:.2f} | {cold.turn_p50_ms:.2f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300, help="turns back to back, per server (default 300)")
    parser.add_argument("--paused-turns", type=int, default=100, help="turns with a pause after each (default 100)")
    parser.add_argument("--settle", type=float, default=0.1, help="the pause after each of those, s (default 0.1)")
    args = parser.parse_args(argv)
    results: dict[str, tuple[Figures, Figures]] = event_loop.run(run(args))
    print(table(results, args.settle))


if __name__ == "__main__":
    main()
