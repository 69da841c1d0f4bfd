"""github-copilot-sdk's JSON-RPC over stdio, its own client (a reader thread, writes from the thread pool) against the
wrapper's (backends/copilot/loop_stdio.py: both on the event loop), on the same peer process in turn.

bench/backends.py times whole Copilot turns, where the CLI's and the model's own spread (several ms between runs)
hides a transport's share. Here the peer is tests/helpers/jsonrpc_peer.py, which stamps what it writes with the
machine's monotonic clock, and each measure is what the wrapper's Copilot adapter does on every turn:

- a burst of 300 notifications written at once (a 300-delta answer): how long until the first and the last
  reached their handler, and the CPU this process spent on the burst;
- a request from the peer answered here (the CLI's pre-tool hook, three a trivial turn), its round trip as the
  peer timed it;
- a request from here answered by the peer (the prompt's `session.send`), its round trip.

Blocks of `--rounds` each alternate the two clients ABBA over `--groups` groups, a fresh peer per block, a quiet
pause after each round (as a turn's pause between requests). p50 over all rounds of a client, ms:

    .venv/bin/python bench/copilot_stdio.py [--groups 3] [--rounds 50]
"""

import argparse
import asyncio
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from copilot._jsonrpc import JsonRpcClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from a2a_wrapper.backends.copilot.loop_stdio import LoopJsonRpcClient
from tests.helpers import jsonrpc_peer

BURST = 300
PAUSE = 0.05
CLIENTS: dict[str, type[JsonRpcClient]] = {"sdk": JsonRpcClient, "loop": LoopJsonRpcClient}
Figures = dict[str, list[float]]


async def block(kind: str, rounds: int, figures: Figures) -> None:
    async with jsonrpc_peer.connected(CLIENTS[kind]) as (client, _):
        await rounds_on(client, rounds, figures)


async def rounds_on(client: JsonRpcClient, rounds: int, figures: Figures) -> None:
    arrived: list[float] = []
    all_arrived = asyncio.Event()

    def note(method: str, params: dict[str, Any]) -> None:
        arrived.append(time.monotonic() - params["sent"])
        if len(arrived) == BURST:
            all_arrived.set()

    client.set_notification_handler(note)
    client.set_request_handler("question", lambda params: {"answer": "yes"})
    await client.request("echo", "warm")
    for _ in range(rounds):
        arrived.clear()
        all_arrived.clear()
        cpu = time.process_time()
        await client.request("burst", {"n": BURST})
        await all_arrived.wait()  # the SDK's client may hand the answer over before the last notes
        figures["burst CPU"].append((time.process_time() - cpu) * 1000)
        figures["burst: first note"].append(arrived[0] * 1000)
        figures["burst: last note"].append(arrived[-1] * 1000)
        await asyncio.sleep(PAUSE)
        asked: dict[str, Any] = await client.request("ask", {})
        figures["the peer's request, answered here"].append(asked["round_trip"] * 1000)
        await asyncio.sleep(PAUSE)
        start = time.monotonic()
        await client.request("echo", "ping")
        figures["a request from here, answered"].append((time.monotonic() - start) * 1000)
        await asyncio.sleep(PAUSE)


async def run(groups: int, rounds: int) -> dict[str, Figures]:
    figures: dict[str, Figures] = {kind: defaultdict(list) for kind in CLIENTS}
    for _ in range(groups):
        for kind in ("sdk", "loop", "loop", "sdk"):
            await block(kind, rounds, figures[kind])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=3, help="ABBA groups (default 3)")
    parser.add_argument("--rounds", type=int, default=50, help="rounds per block (default 50)")
    args = parser.parse_args()
    from a2a_wrapper import event_loop

    figures = event_loop.run(run(args.groups, args.rounds))
    print(f"{args.groups * 2 * args.rounds} rounds per client; p50, ms\n")
    print("| measure | the SDK's client | loop_stdio | change |")
    print("|---|---:|---:|---:|")
    for measure in figures["sdk"]:
        sdk, loop = statistics.median(figures["sdk"][measure]), statistics.median(figures["loop"][measure])
        print(f"| {measure} | {sdk:.3f} | {loop:.3f} | {loop - sdk:+.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
