"""What the model relay adds to a model call: time to the first byte of a streamed completion, and to its end,
through the relay and straight to the offline model, alternating request by request.

The offline model runs in a process of its own (as a provider would), so the relay and the client, in this
process, share a loop as the relay and the wrapper do when deployed. Each request streams a reply of `--deltas`
chunks; the first byte is the first SSE chunk the client reads.

    .venv/bin/python bench/model_relay.py [--requests N] [--deltas N] [--json out.json]
"""

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import SecretStr

from a2a_wrapper import event_loop
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.offline_model import MODEL_ID
from a2a_wrapper.offline_model.service import run as run_model
from a2a_wrapper.sandbox import model_relay
from a2a_wrapper.sandbox.model_relay import Upstream

MODES = ("direct", "relay")


async def timed(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[float, float]:
    """Milliseconds to the first chunk and to the end of one streamed completion."""
    started = time.perf_counter()
    async with http.post(url, json=body, headers=headers) as answer:
        answer.raise_for_status()
        await answer.content.readany()
        first = time.perf_counter()
        await answer.read()
    return (first - started) * 1000, (time.perf_counter() - started) * 1000


async def wait_ready(http: aiohttp.ClientSession, base: str) -> None:
    for _ in range(200):
        try:
            async with http.get(base + "/health") as answer:
                if answer.status == 200:
                    return
        except aiohttp.ClientError:
            await asyncio.sleep(0.05)
    raise RuntimeError(f"the offline model at {base} did not come up")


async def bench(args: argparse.Namespace, port: int) -> dict[str, dict[str, list[float]]]:
    base = f"http://127.0.0.1:{port}"
    body = {
        "model": MODEL_ID,
        "stream": True,
        "messages": [{"role": "user", "content": f"[[long:{args.deltas}]] go"}],
    }
    upstream = Upstream("openai", f"{base}/v1", SecretStr("bench-key"))
    results: dict[str, dict[str, list[float]]] = {mode: {"first": [], "done": []} for mode in MODES}
    async with aiohttp.ClientSession() as http, model_relay.serving(upstream) as relay:
        await wait_ready(http, base)
        targets = {
            "direct": (f"{base}/v1/chat/completions", {"Authorization": "Bearer bench-key"}),
            "relay": (f"{relay.url}/chat/completions", {"Authorization": f"Bearer {relay.token}"}),
        }
        for index in range(args.warmup + args.requests):
            order = MODES if index % 2 == 0 else MODES[::-1]
            for mode in order:
                url, headers = targets[mode]
                first, done = await timed(http, url, body, headers)
                if index >= args.warmup:
                    results[mode]["first"].append(first)
                    results[mode]["done"].append(done)
    return results


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def render(results: dict[str, dict[str, list[float]]]) -> str:
    lines = ["measure      direct p50  relay p50  added p50 | direct p90  relay p90"]
    for measure in ("first", "done"):
        direct, relay = results["direct"][measure], results["relay"][measure]
        lines.append(
            f"{measure + ' (ms)':<12} {pct(direct, 50):>10.2f} {pct(relay, 50):>10.2f} "
            f"{pct(relay, 50) - pct(direct, 50):>10.2f} | {pct(direct, 90):>10.2f} {pct(relay, 90):>10.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200, help="measured requests per mode")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--deltas", type=int, default=50, help="chunks in each streamed reply")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    port = free_port()
    model = multiprocessing.get_context("spawn").Process(target=run_model, args=("127.0.0.1", port), daemon=True)
    model.start()
    try:
        loop = event_loop.new_event_loop()
        results = loop.run_until_complete(bench(args, port))
        loop.close()
    finally:
        model.terminate()
        model.join(10)
    print(f"{args.requests} streamed completions of {args.deltas} chunks per mode, alternating; times in ms")
    print(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
