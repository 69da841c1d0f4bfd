"""What shared state costs per turn: the wrapper's warm trivial turn with its state in SQLite against PostgreSQL.

One process runs the offline model and two wrapped agents, alike but for `state.url`: one keeps its state in its
SQLite file (the write-behind task store, the ledger on the loop), the other on a PostgreSQL server (a2a-sdk's
cluster mode: a versioned write per task event, its event appended for other replicas; the ledger's claim and
the context's lease on the server). Each agent has its own OpenCode; both use one fresh A2A contextId and send
every turn to it. The two are interleaved turn by turn (sqlite, postgres, sqlite, ...), as bench/overhead.py
does its modes, so drift lands on both; a short pause follows each turn.

PostgreSQL is `--url` if given, else a private cluster this script starts in a temp folder (Debian's server
binaries, as the tests do: tests/helpers/postgres.py; commits do not wait for the disk, as SQLite's WAL with
synchronous=NORMAL does not) and stops at the end.

    .venv/bin/python bench/state.py [--turns N] [--url postgresql://…] [--json out.json]
"""

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import aiohttp
from agent_process import serving
from overhead import TRIVIAL, Timing, WrapperClient, agent_settings, compare, pct

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' PostgreSQL helper, from the repo

from a2a_wrapper.agent import running_agent
from a2a_wrapper.config.settings import StateSettings
from a2a_wrapper.offline_model import OfflineModel
from tests.helpers.postgres import postgres_binaries, running_postgres

ENGINES = ("sqlite", "postgres")


@contextmanager
def postgres_url(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    binaries = postgres_binaries()
    if binaries is None:
        raise SystemExit("no PostgreSQL server binaries under /usr/lib/postgresql; pass --url")
    with running_postgres(binaries) as server:
        yield server.new_database()


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        url = stack.enter_context(postgres_url(args.url))
        model = await stack.enter_async_context(OfflineModel())
        http = await stack.enter_async_context(aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)))
        clients = {}
        for engine in ENGINES:
            state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"a2a-bench-{engine}-")))
            settings = agent_settings(model, state)
            if engine == "postgres":
                settings = settings.model_copy(update={"state": StateSettings(url=url)})
            agent = await stack.enter_async_context(running_agent(settings))
            clients[engine] = WrapperClient(http, await stack.enter_async_context(serving(agent)))
        contexts = {engine: str(uuid.uuid4()) for engine in ENGINES}
        timings: dict[str, list[Timing]] = {engine: [] for engine in ENGINES}
        for turn in range(args.warmup + args.turns):
            for engine in ENGINES if turn % 2 else reversed(ENGINES):  # who goes first alternates too
                timing = await clients[engine].turn(contexts[engine], TRIVIAL)
                if turn >= args.warmup:
                    timings[engine].append(timing)
                await asyncio.sleep(args.settle)
    done = {engine: [t.done for t in timings[engine]] for engine in ENGINES}
    return {
        "turns": args.turns,
        "p50": compare(statistics.median(done["sqlite"]), statistics.median(done["postgres"])),
        "p90": compare(pct(done["sqlite"], 90), pct(done["postgres"], 90)),
        "done_ms": done,
    }


def render(results: dict[str, Any]) -> str:
    lines = [f"warm trivial turn, {results['turns']} per engine, interleaved (ms)", "      sqlite  postgres  added"]
    for name in ("p50", "p90"):
        row = results[name]
        lines.append(f"{name}  {row['direct']:8.1f}  {row['wrapper']:8.1f}  {row['added']:+6.1f}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=50, help="warm trivial turns per engine (default 50)")
    parser.add_argument("--warmup", type=int, default=5, help="unrecorded warm-up turns per engine (default 5)")
    parser.add_argument("--settle", type=float, default=0.25, help="pause after each turn, s (default 0.25)")
    parser.add_argument("--url", help="a PostgreSQL database to use instead of a private one")
    parser.add_argument("--json", type=Path, help="write the raw numbers here")
    args = parser.parse_args(argv)
    if args.turns < 2:
        parser.error("--turns needs at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = asyncio.run(bench(args))
    print(render(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
