"""`a2a-wrap demo`: the three-provider fleet behind its registry, on the offline model, as a user runs it."""

import signal
import socket
from pathlib import Path

import httpx
import pytest

from tests.helpers.a2a_wire import send, task_answer
from tests.test_fleet_helpers import FleetProcess, processes_under, running, wait_until

pytestmark = pytest.mark.slow

DEMO_AGENTS = {"opencode-coder": "opencode", "copilot-coder": "copilot", "acp-reviewer": "acp"}


def free_block(size: int) -> int:
    """A port whose next `size - 1` ports are free too (the demo puts its agents right after the registry)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1])
        if base + size > 65535:
            continue
        try:
            for port in range(base, base + size):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise AssertionError("no block of free ports")


async def test_the_demo_runs_three_providers_behind_one_registry(tmp_path: Path, http: httpx.AsyncClient) -> None:
    port = free_block(4)
    demo = await FleetProcess.start("demo", "--state-dir", str(tmp_path), port=port)
    try:
        listed = await wait_until(http, demo, running(*DEMO_AGENTS), timeout=150)
        assert {name: agent["backend"] for name, agent in listed.items()} == DEMO_AGENTS
        assert any(demo.registry + "/agents" in line for line in demo.lines), "the registry URL is printed"
        for name, agent in listed.items():
            card = (await http.get(agent["card_url"])).json()
            assert card["name"] == name
            task = await send(http, agent["url"] + "/a2a/jsonrpc", f"hello {name}")
            assert task_answer(task) == f"Offline model reply: hello {name}"
    finally:
        code = await demo.stop(signal.SIGINT, timeout=90)
    assert code == 0, demo.log()
    assert processes_under(tmp_path) == [], "Ctrl-C leaves no agent and no backend behind"
