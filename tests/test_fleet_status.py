"""`a2a-wrap status` (--watch) and `a2a-wrap logs NAME` against a real fleet on the offline model."""

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.fleet.agent_log import AgentLog
from a2a_wrapper.fleet.logs import recent_lines
from a2a_wrapper.fleet.status import Waiting, format_status, model_of
from tests.conftest import SettingsFactory
from tests.helpers.fleet_process import FleetProcess, agent_config, running, wait_until
from tests.helpers.send_process import read_until, started
from tests.helpers.tool_messages import bash_directive

ASKING_SHIELD = {"defaults": {"read": "allow"}}  # shell commands are put to a person


@asynccontextmanager
async def a2a_wrap(*args: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """`a2a-wrap ARGS` running with its output piped; killed if still running on exit."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "a2a_wrapper", *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("A2A_WRAP_")},
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def output_of(*args: str) -> tuple[int, str, str]:
    async with a2a_wrap(*args) as process, asyncio.timeout(60):
        out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def lines_until(stream: asyncio.StreamReader | None, done: "re.Pattern[str]", count: int = 1) -> list[str]:
    """Lines up to the `count`-th that matches `done`."""
    assert stream is not None
    seen: list[str] = []
    async with asyncio.timeout(60):
        while sum(bool(done.search(line)) for line in seen) < count:
            line = (await stream.readline()).decode()
            assert line, f"the output ended before {done.pattern!r}: {seen}"
            seen.append(line.rstrip("\n"))
    return seen


def approvals_of(frame: list[str], name: str) -> str:
    header = next(line for line in frame if line.startswith("name "))
    row = next(line for line in frame if line.startswith(f"{name} "))
    assert header.split()[-1] == "approvals", header
    return row.split()[-1]


@pytest.mark.slow
async def test_status_watch_and_logs_follow_a_real_fleet(
    tmp_path: Path, make_settings: SettingsFactory, http: httpx.AsyncClient
) -> None:
    agent_config(tmp_path / "agents", "watched", make_settings(), auto_approve=False, shield=ASKING_SHIELD)
    fleet = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    try:
        listed = await wait_until(http, fleet, running("watched"))
        async with started(listed["watched"]["url"], bash_directive("touch waited.txt")) as sender:
            assert sender.stdin is not None and sender.stderr is not None
            await read_until(sender.stderr, "[ask]")

            title = re.compile(rf"^{re.escape(fleet.registry)}  \d\d:\d\d:\d\d  \(every 0\.5 s; Ctrl-C ends\)$")
            async with a2a_wrap("status", "--watch", "--interval", "0.5", "--registry", fleet.registry) as watch:
                frames = await lines_until(watch.stdout, title, count=3)  # two whole frames, the third begun
                watch.send_signal(signal.SIGINT)
                async with asyncio.timeout(30):
                    assert await watch.wait() == 0
            first = frames[frames.index(next(f for f in frames if title.search(f))) :]
            assert approvals_of(first, "watched") == "1", frames
            assert [bool(title.search(line)) for line in frames].count(True) == 3, "it redrew"

            async with a2a_wrap("logs", "watched", "-f", "-n", "3", "--registry", fleet.registry) as follow:
                shown = await lines_until(follow.stdout, re.compile("."), count=3)  # the last three lines
                sender.stdin.write(b"y\n")  # the answer: the agent logs its decision, and follow shows it
                shown += await lines_until(follow.stdout, re.compile(r"allow bash \(execute\) touch waited\.txt"))
                follow.send_signal(signal.SIGINT)
                async with asyncio.timeout(30):
                    assert await follow.wait() == 0
            async with asyncio.timeout(60):
                assert await sender.wait() == 0
        code, out, _ = await output_of("status", "--registry", fleet.registry)
        assert code == 0 and approvals_of(out.splitlines(), "watched") == "0", out

        code, out, err = await output_of("logs", "watched", "-n", "500", "--registry", fleet.registry)
        assert code == 0, err
        assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d --- fleet: started \(pid \d+\)$", out, re.M), out
        assert "agent 'watched' serving" in out

        code, out, err = await output_of("logs", "nobody", "--registry", fleet.registry)
        assert code == 1 and err.strip() == "Error: no agent named 'nobody' in this registry; known: watched"
    finally:
        assert await fleet.stop() == 0, fleet.log()


def test_the_status_table_counts_what_each_agent_waits_on() -> None:
    agents = [
        {"name": "a", "state": "running", "url": "http://a", "backend": "acp", "last_health": None},
        {"name": "b", "state": "running", "url": "http://b", "backend": "opencode", "model": "offline/m"},
        {"name": "c", "state": "running", "url": "http://c"},
        {"name": "d", "state": "backoff", "url": "http://d"},
    ]
    waiting = {"a": Waiting(2, 0), "b": Waiting(1, 1), "c": None}
    rows = [line.split()[-1] for line in format_status(agents, waiting).splitlines()]
    assert rows == ["approvals", "-" * len("1 + 1 question"), "2", "question", "?", "-"]
    assert "1 + 1 question" in format_status(agents, waiting).splitlines()[3]


def test_the_model_is_the_configs_else_what_the_backend_reports() -> None:
    assert model_of({"model": "offline/m"}) == "offline/m"
    assert model_of({"model": None, "last_health": {"backend": {"kind": "acp", "model": "gpt-x"}}}) == "gpt-x"
    assert model_of({"model": None, "last_health": {"backend": {"kind": "acp"}}}) == "-"


def test_an_agent_log_is_rotated_at_its_cap_and_read_across_the_rotation(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "fleet.log"
    log = AgentLog(path, max_bytes=200)
    for n in range(12):
        log.line(f"line {n:02d} " + "x" * 20)
    log.close()
    assert path.stat().st_size <= 200 and path.with_name("fleet.log.1").exists()
    shown = recent_lines(path, 6)
    assert [line.split()[3] for line in shown] == ["06", "07", "08", "09", "10", "11"], shown


@pytest.mark.slow
async def test_logs_of_an_agent_the_registry_only_lists_says_where_its_log_is(http: httpx.AsyncClient) -> None:
    elsewhere, port = f"http://127.0.0.1:{free_port()}", free_port()
    registry = f"http://127.0.0.1:{port}"
    async with a2a_wrap("registry", "--agent", elsewhere, "--port", str(port), "--health-interval", "0.2") as served:
        async with asyncio.timeout(30):
            while True:  # the registry announces no readiness but its port
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(registry + "/health")).status_code == 200:
                        break
                await asyncio.sleep(0.2)
        code, _, err = await output_of("logs", elsewhere.removeprefix("http://"), "--registry", registry)
        watched = await output_of("status", "--registry", registry)
        served.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            await served.wait()
    assert code == 1
    assert err.strip() == (
        f"Error: agent '{elsewhere.removeprefix('http://')}' runs elsewhere ({elsewhere}); the fleet only lists it and "
        "keeps no log of it: read its log where it runs (for one in docker compose: docker compose logs)"
    )
    assert watched[0] == 0 and approvals_of(watched[1].splitlines(), elsewhere.removeprefix("http://")) == "-"
