"""Drills: the agent's state folder on a small filesystem of its own (a tmpfs, mounted by root), filled for real
with a file written until ENOSPC, then turns sent and connections made through the sandbox's egress proxy.

A full disk is one sentence naming the file, said once in the log: a turn fails at once with it (a context with a
session as a new one), never at the turn's timeout; the model's connection goes on without its audit entry, and
a host only a rule allows, and a tool call the shield allows, are refused until their entry can be written (fail
closed).
"""

import asyncio
import errno
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx
import pytest
import yaml

from a2a_wrapper.events import Permission, Question
from a2a_wrapper.frontend.metrics import AgentMetrics
from a2a_wrapper.permissions.gate import PermissionGate
from a2a_wrapper.permissions.policy import Policy
from a2a_wrapper.sandbox.egress import Destination, EgressDecision, EgressPolicy, EgressProxy
from a2a_wrapper.shield.decision import Decision
from a2a_wrapper.state.audit import AuditEntry, AuditLog
from a2a_wrapper.state.context_rules import ContextRules
from a2a_wrapper.state.database import open_database
from a2a_wrapper.state.sessions import ContextKey
from tests.conftest import SettingsFactory
from tests.helpers.a2a_wire import rpc, user_message
from tests.helpers.serve_process import LoggedServe, read_log, serve_config, start_serve, wait_healthy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "state"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> int:
    """Writes a file in `folder` until the filesystem refuses (ENOSPC); the bytes written."""
    written = 0
    block = b"\0" * (1 << 20)
    with open(folder / "filler", "wb", buffering=0) as filler:
        while True:
            try:
                written += filler.write(block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
    while True:  # the last partial block too
        try:
            with open(folder / f"crumb-{written}", "wb", buffering=0) as crumb:
                crumb.write(b"\0" * 4096)
            written += 4096
        except OSError:
            return written


async def test_a_full_disk_fails_each_turn_at_once_with_one_sentence_naming_the_state_file(
    small_disk: Path, tmp_path: Path, make_settings: SettingsFactory, http: httpx.AsyncClient
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    settings = make_settings(state_dir=small_disk, backend={"workdir": workdir})
    config = tmp_path / "agent.yaml"
    config.write_text(yaml.safe_dump(serve_config(settings, "full", small_disk, auto_approve=True)))
    agent = LoggedServe(settings.advertised_url, await start_serve(config))
    reading = asyncio.create_task(read_log(agent))
    jsonrpc = agent.url + "/a2a/jsonrpc"
    answers: list[tuple[float, dict[str, object]]] = []
    try:
        async with asyncio.timeout(180):
            await wait_healthy(http, agent.url)
            first = await rpc(http, jsonrpc, "SendMessage", {"message": user_message("hello before the disk fills")})
            assert first["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", first
            fill(small_disk)
            for context_id in (first["result"]["task"]["contextId"], None):  # a context with a session; a new one
                started = time.monotonic()
                answer = await rpc(
                    http, jsonrpc, "SendMessage", {"message": user_message("on a full disk", context_id)}
                )
                answers.append((time.monotonic() - started, answer))
            await asyncio.sleep(2)  # the writer's retries, each second, would show here
            serving_log = list(agent.log)
    finally:
        agent.process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            await agent.process.wait()
        await reading

    for took, answer in answers:
        assert took < 10, f"answered in {took:.1f} s, not at the turn timeout"
        error = answer["error"]
        assert isinstance(error, dict) and error["code"] == -32603, answer
        assert error["message"].startswith(f"The agent's state file {small_disk / 'state.db'} cannot be written"), error
        assert "database or disk is full" in error["message"]
    said = [line for line in serving_log if "cannot be written" in line]
    assert len(said) == 1, "\n".join(serving_log)
    assert not [line for line in serving_log if "Traceback" in line], "\n".join(serving_log)
    assert agent.process.returncode == 0, "the agent stops cleanly on a full disk"


class _AllowEveryHost:
    """The shield's network rules, as a host rule that allows every host would decide (a pure stand-in)."""

    def decide(self, request: Permission) -> Decision:
        return Decision("allow", "every host", "allow-all-hosts")


async def test_an_egress_decision_the_full_disk_cannot_audit_lets_the_model_through_and_refuses_other_hosts(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = open_database(small_disk / "state.db")
    model = await asyncio.start_server(lambda reader, writer: writer.close(), "127.0.0.1", 0)
    port = model.sockets[0].getsockname()[1]
    try:
        audit = AuditLog(engine, str(small_disk / "state.db"))
        await audit.initialize()
        fill(small_disk)
        policy = EgressPolicy({Destination("127.0.0.1", port)}, _AllowEveryHost())
        proxy = EgressProxy(small_disk.parent / "egress.sock", policy, partial(_record, audit))
        await proxy.start()
        try:
            async with asyncio.timeout(30):
                to_model = await _connect(proxy.socket_path, f"127.0.0.1:{port}")
                elsewhere = await _connect(proxy.socket_path, "files.example.invalid:443")
        finally:
            await proxy.stop()
    finally:
        model.close()
        await engine.dispose()

    assert to_model.startswith("HTTP/1.1 200"), to_model
    assert elsewhere.startswith("HTTP/1.1 403"), elsewhere
    assert f"the audit log in {small_disk / 'state.db'} cannot be written (database or disk is full)" in elsewhere
    said = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]


async def _record(audit: AuditLog, decision: EgressDecision, wait_ms: float) -> None:
    allowed = "allow" if decision.allowed else "deny"
    entry = AuditEntry(
        time.time(),
        "full",
        "",
        "",
        "",
        "egress",
        "network",
        decision.target,
        allowed,
        decision.rule,
        "sandbox",
        wait_ms,
    )
    await audit.record(entry)


async def _connect(socket_path: Path, target: str) -> str:
    """A CONNECT through the egress proxy's socket; the first line of its answer and its body."""
    reader, writer = await asyncio.open_unix_connection(str(socket_path))
    try:
        writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        await writer.drain()
        return (await reader.read(4096)).decode(errors="replace")
    finally:
        writer.close()


@dataclass
class _Turn:
    """A turn as the gate sees it (a pure stand-in): the decisions it was given."""

    replies: list[Decision] = field(default_factory=list)
    key: ContextKey = field(default_factory=lambda: ContextKey("", "ctx-full"))
    task_id: str = "task-full"

    async def reply(self, request: Permission, decision: Decision) -> None:
        self.replies.append(decision)

    async def answer(self, question: Question, text: str) -> None:
        raise AssertionError("no question is asked here")


async def test_a_tool_call_the_full_disk_cannot_audit_is_denied_with_the_audits_sentence(small_disk: Path) -> None:
    engine = open_database(small_disk / "state.db")
    try:
        audit = AuditLog(engine, str(small_disk / "state.db"))
        await audit.initialize()
        rules = ContextRules(engine)
        await rules.initialize()
        fill(small_disk)
        gate = PermissionGate(Policy.auto_approving(True, small_disk), rules, audit, AgentMetrics().decided, "full")
        turn = _Turn()
        async with asyncio.timeout(30):
            pending = await gate.decide(turn, Permission(id="p-1", kind="execute", tool="bash", command="ls"))
    finally:
        await engine.dispose()

    assert pending is None
    [decision] = turn.replies
    assert decision.outcome == "deny", decision
    assert f"the audit log in {small_disk / 'state.db'} cannot be written (database or disk is full)" in decision.reason
