"""The boundary holds when no rule stops anything: every backend, `auto_approve: true`, real tool calls.

Each test lets the agent's own bash do what the sandbox must stop, then looks at the disk, the socket or the
audit afterwards — not at what the agent said.
"""

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from a2a_wrapper.shield.rules import ShieldConfig
from a2a_wrapper.state.audit import recent
from tests.helpers.a2a_wire import answer_text, final_state, stream
from tests.helpers.behaviour import BACKENDS, BackendUnderTest, Harness
from tests.helpers.listener import listener
from tests.helpers.tool_messages import answer_params, bash_params

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(params=BACKENDS, ids=lambda backend: backend.name)
def backend(request: pytest.FixtureRequest) -> BackendUnderTest:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def harness(backend: BackendUnderTest, offline_model, tmp_path: Path, request: pytest.FixtureRequest) -> Harness:  # type: ignore[no-untyped-def]
    return Harness(backend, offline_model, tmp_path, request.node)  # type: ignore[arg-type]


@contextlib.contextmanager
def canary(folder: Path) -> Iterator[tuple[Path, str]]:
    """A file with a unique secret in `folder` (created if missing), removed afterwards with what it created."""
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    secret = f"canary-{uuid.uuid4().hex}"
    path = folder / f".a2a-wrapper-test-{secret}"
    path.write_text(secret)
    try:
        yield path, secret
    finally:
        path.unlink(missing_ok=True)
        if created:
            folder.rmdir()


async def test_writes_outside_the_workspace_do_not_reach_the_disk(harness: Harness, http: httpx.AsyncClient) -> None:
    in_repo = REPO / f"sandbox-escape-{uuid.uuid4().hex}.txt"
    in_home = Path.home() / f".sandbox-escape-{uuid.uuid4().hex}"
    state_file = harness.tmp_path / "state" / "planted.txt"
    command = f"echo x > {in_repo}; echo x > {in_home}; echo x > {state_file}; echo inside > inside.txt"
    try:
        async with harness.serving(auto_approve=True) as served:
            events = await stream(http, served.jsonrpc, bash_params(command, description="run a command"))
            assert final_state(events) == "TASK_STATE_COMPLETED"
            assert (served.workdir / "inside.txt").read_text().strip() == "inside", "the workspace is writable"
        assert not in_repo.exists() and not in_home.exists() and not state_file.exists()
    finally:
        in_repo.unlink(missing_ok=True)
        in_home.unlink(missing_ok=True)


async def test_the_home_and_the_wrappers_state_cannot_be_read(harness: Harness, http: httpx.AsyncClient) -> None:
    with canary(Path.home() / ".ssh") as (key, secret):
        async with harness.serving(auto_approve=True) as served:
            state_db = served.agent.settings.state_dir / "state.db"  # type: ignore[operator]
            reads = f"cat {key}; cat ~root/.ssh/{key.name}; head -c 16 {state_db}; cat /etc/shadow"
            command = f"{{ {reads}; }} 2>/dev/null; echo done"  # the model quotes only the start of the output
            events = await stream(http, served.jsonrpc, bash_params(command, description="run a command"))
            assert final_state(events) == "TASK_STATE_COMPLETED"
            answer = answer_text(events)
    assert "done" in answer, "the command ran and its output reached the model"
    assert secret not in answer and "SQLite format" not in answer and "root:" not in answer


async def test_no_host_is_reached_but_through_the_egress_proxy(harness: Harness, http: httpx.AsyncClient) -> None:
    async with listener() as (port, accepted):
        direct = f"echo direct > /dev/tcp/127.0.0.1/{port}"
        proxied = (
            "exec 3<>/dev/tcp/127.0.0.1/3128; "
            f"printf 'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n' >&3; head -c 12 <&3; echo"
        )
        async with harness.serving(auto_approve=True) as served:
            events = await stream(
                http, served.jsonrpc, bash_params(f"bash -c '{direct}'; {proxied}", description="run a command")
            )
            assert final_state(events) == "TASK_STATE_COMPLETED"
            assert "HTTP/1.1 403" in answer_text(events), "the proxy answered, and refused"
            database = served.agent.settings.state_dir / "state.db"  # type: ignore[operator]
        assert accepted == [], "nothing connected to the host's listener"
    egress = [entry for entry in recent(database, 50) if entry.tool == "egress"]
    assert any(e.target == f"127.0.0.1:{port}" and e.decision == "deny" for e in egress), egress
    assert any(e.decision == "allow" and e.rule == "sandbox:endpoint" for e in egress), "the model was reached"


async def test_paths_the_shield_denies_are_masked_even_when_a_command_hides_them(
    harness: Harness, http: httpx.AsyncClient
) -> None:
    """Every class allowed, but `.env` denied and `.git` read-only: a command the rules cannot see into
    (the names are computed), asked of a person who says yes, still finds nothing to read or write."""
    workdir = harness.tmp_path / "state" / "workspace"
    (workdir / ".git").mkdir(parents=True)
    (workdir / ".git" / "config").write_text("[core]\n")
    (workdir / ".env").write_text("TOKEN=top-secret-value\n")
    shield = ShieldConfig.model_validate(
        {
            "defaults": {c: "allow" for c in ("read", "write", "delete", "execute", "network", "mcp")},
            "rules": [
                {"name": "no-env", "decision": "deny", "paths": ["**/.env"]},
                {"name": "git-ro", "decision": "deny", "class": ["write", "delete"], "paths": [".git/**"]},
            ],
        }
    )
    command = 'd=.gi; f=.en; cat "${f}v"; echo "[core] fsmonitor = touch pwned" >> "${d}t/config"; echo done'
    async with harness.serving(shield=shield) as served:
        events = await stream(http, served.jsonrpc, bash_params(command, description="run a command"))
        while final_state(events) == "TASK_STATE_INPUT_REQUIRED":  # the rules ask: a person wrongly says yes
            events = await stream(http, served.jsonrpc, answer_params(events[0]["task"], "yes"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        said = answer_text(events)
    assert "done" in said and "top-secret-value" not in said
    assert (workdir / ".git" / "config").read_text() == "[core]\n"
    assert (workdir / ".env").read_text() == "TOKEN=top-secret-value\n", "masked, not removed"


async def test_no_way_out_of_the_sandbox(harness: Harness, http: httpx.AsyncClient) -> None:
    """No nested user namespace (the way to regain capabilities), no capabilities, no new privileges."""
    command = (
        "unshare -Ur true 2>/dev/null && echo nested-allowed || echo nested-refused; "
        "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | tr -s '\\t' ' '"
    )
    async with harness.serving(auto_approve=True) as served:
        events = await stream(http, served.jsonrpc, bash_params(command, description="run a command"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        health = (await http.get(served.url + "/health")).json()
    said = answer_text(events)
    assert "nested-refused" in said and "CapEff: 0000000000000000" in said and "NoNewPrivs: 1" in said
    assert health["runtime"]["kind"] == "sandbox" and str(served.workdir.resolve()) in health["runtime"]["writable"]


async def test_files_that_run_code_outside_tool_calls_stay_as_they_were(
    harness: Harness, http: httpx.AsyncClient
) -> None:
    """With every tool call allowed, git's config and hooks (fsmonitor, hooks run by the next git command)
    cannot be changed: the sandbox binds them read-only."""
    workdir = harness.tmp_path / "state" / "workspace"
    (workdir / ".git" / "hooks").mkdir(parents=True)
    (workdir / ".git" / "config").write_text("[core]\n")
    command = (
        "printf '[core]\\n fsmonitor = touch pwned\\n' >> .git/config; "
        "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/post-checkout; echo done"
    )
    async with harness.serving(auto_approve=True) as served:
        events = await stream(http, served.jsonrpc, bash_params(command, description="run a command"))
        assert final_state(events) == "TASK_STATE_COMPLETED" and "done" in answer_text(events)
    assert (workdir / ".git" / "config").read_text() == "[core]\n"
    assert list((workdir / ".git" / "hooks").iterdir()) == []
