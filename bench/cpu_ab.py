"""The agent's CPU per wrapped trivial turn for two checkouts of this project, in blocks that alternate ABBA.

bench/overhead.py gives one code's figures per run, and this VM's speed moves by more than a change's gain from
one run to the next (OpenCode's own CPU for the same direct turn: 91 to 141 ms across one day's runs). Here each
block is a fresh agent process (bench/agent_process.py, as `a2a-wrap` runs it) on one checkout, serving `--turns`
wrapped trivial turns on one context after 20 unrecorded ones, with nothing else running; the blocks go A, B, B, A,
A, B, ... so that a drift of the machine falls on both alike, and the difference is shown per ABBA group.

    .venv/bin/python bench/cpu_ab.py OLD_CHECKOUT NEW_CHECKOUT [--groups 3] [--turns 100] [--backend opencode]

A checkout is a folder holding `a2a_wrapper/` (`git worktree add /tmp/base <commit>` makes one); its code runs
with this venv's packages. CPU is the agent's process alone (its threads' schedstat, in ns), not OpenCode's.
"""

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp

WARMUP = 20
PAUSE = 0.05  # seconds after each turn: OpenCode's tail after session.idle lands outside the next turn less often


async def block(turns: int, backend: str) -> tuple[float, float]:
    """One agent process on the checkout this interpreter imports: ms of its CPU per wrapped trivial turn, and the
    turns' p50 ms."""
    from agent_process import agent_process
    from backends import wrapped_settings
    from overhead import TRIVIAL, WrapperClient, agent_settings

    from a2a_wrapper.offline_model import OfflineModel

    async with AsyncExitStack() as stack:
        state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="a2a-cpu-ab-")))
        model = await stack.enter_async_context(OfflineModel())
        settings = agent_settings(model, state) if backend == "opencode" else wrapped_settings(backend, model, state)
        agent = await stack.enter_async_context(agent_process(settings))
        http = await stack.enter_async_context(aiohttp.ClientSession())
        client = WrapperClient(http, agent.url)
        context_id = f"cpu-ab-{uuid.uuid4().hex[:8]}"
        walls = []
        for index in range(WARMUP + turns):
            if index == WARMUP:
                before = agent.cpu_seconds()
            timing = await client.turn(context_id, TRIVIAL)
            if index >= WARMUP:
                walls.append(timing.done)
            await asyncio.sleep(PAUSE)
            model.control.clear()
        return (agent.cpu_seconds() - before) * 1000 / turns, statistics.median(walls)


def run_block(checkout: Path, turns: int, backend: str) -> tuple[float, float]:
    """A block in a process of its own, whose `a2a_wrapper` is the checkout's."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), str(Path(__file__).parent)])}
    done = subprocess.run(
        [sys.executable, __file__, "--block", "--turns", str(turns), "--backend", backend],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=checkout,
    )
    if done.returncode != 0:
        raise SystemExit(f"a block on {checkout} failed:\n{done.stderr[-2000:]}")
    cpu, wall = done.stdout.strip().splitlines()[-1].split()
    return float(cpu), float(wall)


def main() -> int:
    from backends import SECTIONS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, nargs="?", help="checkout A (the old code)")
    parser.add_argument("b", type=Path, nargs="?", help="checkout B (the new code)")
    parser.add_argument("--groups", type=int, default=3, help="ABBA groups (default 3: 12 blocks)")
    parser.add_argument("--turns", type=int, default=100, help="recorded turns per block (default 100)")
    parser.add_argument(
        "--backend",
        default="opencode",
        choices=list(SECTIONS),
        help="the agent's backend, as bench/backends.py configures it (default opencode)",
    )
    parser.add_argument("--block", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.block:
        from a2a_wrapper import event_loop

        cpu, wall = event_loop.run(block(args.turns, args.backend))
        print(f"{cpu:.4f} {wall:.4f}")
        return 0
    if args.a is None or args.b is None:
        parser.error("give two checkouts")
    for checkout in (args.a, args.b):
        if not (checkout / "a2a_wrapper").is_dir():
            parser.error(f"{checkout} holds no a2a_wrapper/")
    cpu: dict[str, list[float]] = {"A": [], "B": []}
    wall: dict[str, list[float]] = {"A": [], "B": []}
    for group in range(args.groups):
        for name in "ABBA":
            block_cpu, block_wall = run_block(args.a if name == "A" else args.b, args.turns, args.backend)
            cpu[name].append(block_cpu)
            wall[name].append(block_wall)
            print(f"group {group + 1} {name}: {block_cpu:.2f} ms of CPU, turn p50 {block_wall:.1f} ms", file=sys.stderr)
    differences = [
        (cpu["B"][2 * g] + cpu["B"][2 * g + 1] - cpu["A"][2 * g] - cpu["A"][2 * g + 1]) / 2 for g in range(args.groups)
    ]
    print(f"the agent's CPU per wrapped trivial turn ({args.backend}), {args.turns} turns a block, ms")
    print(f"A {args.a}: " + " ".join(f"{x:.2f}" for x in cpu["A"]) + f"  mean {statistics.mean(cpu['A']):.2f}")
    print(f"B {args.b}: " + " ".join(f"{x:.2f}" for x in cpu["B"]) + f"  mean {statistics.mean(cpu['B']):.2f}")
    shown = " ".join(f"{d:+.2f}" for d in differences)
    print(f"B - A per ABBA group: {shown}  mean {statistics.mean(differences):+.2f}")
    print(f"the turn's p50, ms: A mean {statistics.mean(wall['A']):.1f}, B mean {statistics.mean(wall['B']):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
