"""Per backend: what the sandbox costs, against the same wrapped agent run as a plain process, in one run.

For each backend (opencode, copilot, acp-opencode, acp-copilot) one process runs the offline model and two
wrapped agents of the same config, one with `runtime: {kind: sandbox}` and one with `runtime: {kind: process}`:

- start: from entering `running_agent` until the backend answers (bubblewrap, the bridge, the egress proxy,
  the masks), measured `--starts` times per runtime, alternating;
- a trivial turn, and the first text of a 300-delta reply (`[[long:300]]`), interleaved turn by turn between
  the two agents after warm-ups, each followed by a quiet pause (`--settle`, as in bench/backends.py).
Every model call of the sandboxed agent crosses the bridge and the egress proxy; the process agent's does not.

    .venv/bin/python bench/sandbox.py [--turns N] [--starts N] [--backends opencode,copilot] [--json out.json]
"""

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from agent_process import serving
from backends import LONG, SECTIONS, TRIVIAL, timed
from overhead import WrapperClient, compare, pct

from a2a_wrapper.agent import running_agent
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.runtimes import ProcessRuntime, SandboxRuntime
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import OfflineModel

log = logging.getLogger("bench.sandbox")
RUNTIMES = {"process": ProcessRuntime(), "sandbox": SandboxRuntime()}


@dataclass
class Result:
    backend: str
    start: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in RUNTIMES})
    trivial: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in RUNTIMES})
    first_text: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in RUNTIMES})


def settings_for(name: str, runtime: str, model: OfflineModel, folder: Path) -> AgentSettings:
    state = folder / runtime
    return AgentSettings(
        card=CardSettings(name=f"bench-{name}-{runtime}"),
        server=ServerSettings(port=free_port()),
        backend=SECTIONS[name](model, state / "workspace", state),
        state_dir=state,
        runtime=RUNTIMES[runtime],
        auto_approve=True,
    )


async def time_starts(name: str, model: OfflineModel, folder: Path, starts: int, result: Result) -> None:
    for _ in range(starts):
        for runtime in RUNTIMES:
            begun = time.perf_counter()
            async with running_agent(settings_for(name, runtime, model, folder)):
                result.start[runtime].append((time.perf_counter() - begun) * 1000)


async def time_turns(name: str, model: OfflineModel, folder: Path, args: argparse.Namespace, result: Result) -> None:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)))
        clients = {}
        for runtime in RUNTIMES:
            agent = await stack.enter_async_context(running_agent(settings_for(name, runtime, model, folder)))
            clients[runtime] = WrapperClient(http, await stack.enter_async_context(serving(agent)))
        context = f"bench-{uuid.uuid4().hex[:8]}"
        for text, series, pick in ((TRIVIAL, result.trivial, "done"), (LONG, result.first_text, "first_text")):
            for index in range(args.warmup + args.turns):
                for runtime, client in clients.items():
                    timing = await timed(client.turn(context, text), args.settle)
                    if index >= args.warmup:
                        series[runtime].append(getattr(timing, pick))
                model.control.clear()


async def bench_backend(name: str, model: OfflineModel, args: argparse.Namespace) -> Result:
    result = Result(name)
    with tempfile.TemporaryDirectory(prefix=f"bench-sandbox-{name}-") as folder:
        await time_starts(name, model, Path(folder) / "starts", args.starts, result)
        await time_turns(name, model, Path(folder) / "turns", args, result)
    return result


def summarise(result: Result) -> dict[str, Any]:
    row: dict[str, Any] = {"backend": result.backend}
    for measure in ("start", "trivial", "first_text"):
        series = getattr(result, measure)
        row[measure] = compare(pct(series["process"], 50), pct(series["sandbox"], 50))
    return row


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | start, process | sandbox | ratio | trivial turn, process | sandbox | added | ratio "
        "| first text of 300 deltas, process | sandbox | added |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        s, t, f = row["start"], row["trivial"], row["first_text"]
        lines.append(
            f"| {row['backend']} | {s['direct']:.0f} | {s['wrapper']:.0f} | {s['ratio']:.2f}x "
            f"| {t['direct']:.1f} | {t['wrapper']:.1f} | {t['added']:+.1f} | {t['ratio']:.2f}x "
            f"| {f['direct']:.1f} | {f['wrapper']:.1f} | {f['added']:+.1f} |"
        )
    return "\n".join(lines)


async def run_all(args: argparse.Namespace) -> list[Result]:
    results = []
    async with OfflineModel() as model:
        for name in args.backends.split(","):
            log.warning("benchmarking the sandbox of %s", name)
            results.append(await bench_backend(name, model, args))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--settle", type=float, default=0.25, help="pause after each turn, s")
    parser.add_argument("--backends", default=",".join(SECTIONS))
    parser.add_argument("--json")
    parser.add_argument("--log-level", default="ERROR")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper())
    results = asyncio.run(run_all(args))
    rows = [summarise(result) for result in results]
    print("Times in ms, p50; `process` is the same agent unsandboxed (the ratio is sandbox / process).")
    print(render(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": rows, "raw": [asdict(r) for r in results]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
