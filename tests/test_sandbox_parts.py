"""The sandbox's parts on their own: the egress proxy over a real socket, its decisions, masks, the bwrap line."""

from pathlib import Path

import pytest

from a2a_wrapper.config.backends import OpenCodeSettings
from a2a_wrapper.config.runtimes import SandboxRuntime
from a2a_wrapper.config.settings import AgentSettings, CardSettings
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.sandbox import Sandbox
from a2a_wrapper.sandbox.egress import ASK_IS_DENY, Destination, EgressDecision, EgressPolicy, EgressProxy, parse_head
from a2a_wrapper.sandbox.masks import denied_paths
from a2a_wrapper.sandbox.plan import SandboxPlan
from a2a_wrapper.shield import Shield
from a2a_wrapper.shield.rules import ShieldConfig
from tests.helpers.listener import listener, through


@pytest.mark.parametrize(
    ("head", "method", "destination", "upstream"),
    [
        (b"CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n", "CONNECT", Destination("example.com", 443), None),
        (b"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n", "CONNECT", Destination("::1", 8080), None),
        (b"CONNECT EXAMPLE.com.:443 HTTP/1.1\r\n\r\n", "CONNECT", Destination("example.com", 443), None),
        (b"CONNECT 2130706433:80 HTTP/1.1\r\n\r\n", "CONNECT", Destination("127.0.0.1", 80), None),
        (
            b"GET http://user@docs.python.org/3/?q=1 HTTP/1.1\r\nHost: docs.python.org\r\n\r\n",
            "GET",
            Destination("docs.python.org", 80),
            b"GET /3/?q=1 HTTP/1.1\r\nHost: docs.python.org\r\n\r\n",
        ),
    ],
)
def test_a_proxy_request_names_one_destination(
    head: bytes, method: str, destination: Destination, upstream: bytes | None
) -> None:
    assert parse_head(head) == (method, destination, upstream)


@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (b"CONNECT example.com HTTP/1.1\r\n\r\n", "names no port"),
        (b"CONNECT example.com:99999 HTTP/1.1\r\n\r\n", "invalid port"),
        (b"CONNECT exa mple.com:443 HTTP/1.1\r\n\r\n", "request line"),
        (b"GET /relative HTTP/1.1\r\n\r\n", "absolute http:// URL"),
        (b"GET https://example.com/ HTTP/1.1\r\n\r\n", "absolute http:// URL"),
        (b"CONNECT ex%41mple.com:443 HTTP/1.1\r\n\r\n", "the host"),
        (b"CONNECT example.com:443 SPDY/3\r\n\r\n", "unsupported version"),
        (b"\xff\xfe HTTP/1.1\r\n\r\n", "request line"),
    ],
)
def test_a_malformed_proxy_request_is_refused_with_the_reason(head: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_head(head)


NETWORK_RULES = ShieldConfig.model_validate(
    {
        "rules": [
            {"name": "docs", "decision": "allow", "class": "network", "hosts": ["docs.python.org"]},
            {"name": "pypi-ask", "decision": "ask", "class": "network", "hosts": ["*.example.org"]},
        ]
    }
)


@pytest.mark.parametrize(
    ("destination", "allowed", "rule"),
    [
        (Destination("127.0.0.1", 8765), True, "sandbox:endpoint"),
        (Destination("127.0.0.1", 8766), False, "default:network"),
        (Destination("docs.python.org", 443), True, "agent:docs"),
        (Destination("files.example.org", 443), False, "agent:pypi-ask"),
        (Destination("evil.example.com", 443), False, "default:network"),
    ],
)
def test_hosts_are_decided_by_the_shields_network_rules(
    destination: Destination, allowed: bool, rule: str, tmp_path: Path
) -> None:
    policy = EgressPolicy({Destination("127.0.0.1", 8765)}, Shield(NETWORK_RULES, tmp_path))
    decision = policy.decide(destination)
    assert (decision.allowed, decision.rule) == (allowed, rule)
    if not allowed:
        assert decision.reason == ASK_IS_DENY and decision.outcome == "ask-denied", "network defaults to ask"


def test_auto_approve_allows_tool_calls_but_never_a_host() -> None:
    policy = EgressPolicy({Destination("127.0.0.1", 8765)}, None)
    assert policy.decide(Destination("127.0.0.1", 8765)).allowed
    assert not policy.decide(Destination("example.com", 443)).allowed


async def test_the_proxy_pipes_what_it_allows_refuses_the_rest_and_records_each(tmp_path: Path) -> None:
    records: list[EgressDecision] = []

    async def record(decision: EgressDecision, wait_ms: float) -> None:
        records.append(decision)

    async with listener() as (port, received):
        policy = EgressPolicy({Destination("127.0.0.1", port)}, None)
        proxy = EgressProxy(tmp_path / "egress.sock", policy, record)
        await proxy.start()
        try:
            tunnel = await through(proxy.socket_path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nping".encode())
            plain = await through(proxy.socket_path, f"GET http://127.0.0.1:{port}/x HTTP/1.1\r\n\r\n".encode())
            refused = await through(proxy.socket_path, f"CONNECT 127.0.0.1:{port + 1} HTTP/1.1\r\n\r\n".encode())
            garbled = await through(proxy.socket_path, b"HELLO\r\n\r\n")
        finally:
            await proxy.stop()
    assert tunnel == b"HTTP/1.1 200 Connection established\r\n\r\npong"
    assert plain == b"pong" and received == [b"ping", b"GET /x HTTP/1.1\r\n\r\n"]
    assert refused.startswith(b"HTTP/1.1 403") and b"no shield network rule" in refused
    assert garbled.startswith(b"HTTP/1.1 400")
    assert [(r.destination.port, r.allowed) for r in records] == [(port, True), (port, True), (port + 1, False)]


def test_path_denials_become_masks_and_read_only_binds(tmp_path: Path) -> None:
    for path in (".env", "app/.env", "app/main.py", ".git/config", ".git/hooks/pre-commit", "keys/id_rsa"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    shield = ShieldConfig.model_validate(
        {
            "rules": [
                {"name": "env", "decision": "deny", "paths": ["**/.env"]},
                {"name": "keys", "decision": "deny", "class": "read", "paths": ["keys/**"]},
                {"name": "git", "decision": "deny", "class": ["write", "delete"], "paths": [".git/**"]},
                {"name": "only-bash", "decision": "deny", "tools": ["bash"], "paths": ["app/**"]},
            ]
        }
    )
    masked, read_only = denied_paths(shield, tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in masked) == [".env", "app/.env", "keys"]
    assert [p.relative_to(tmp_path).as_posix() for p in read_only] == [".git"]


def _settings(tmp_path: Path, **backend: object) -> AgentSettings:
    return AgentSettings(
        card=CardSettings(name="boxed"),
        backend=OpenCodeSettings(workdir=tmp_path / "workspace", **backend),  # type: ignore[arg-type]
        state_dir=tmp_path / "state",
        runtime=SandboxRuntime(),
    )


def test_the_command_line_unshares_everything_and_binds_no_home(tmp_path: Path) -> None:
    plan = SandboxPlan(workdir=tmp_path / "ws", writable=[tmp_path / "own"], sockets=tmp_path / "sockets")
    argv = plan.command(Path("/usr/bin/bwrap"), ["opencode", "serve"])
    options = argv[: argv.index("--")]
    for required in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"):
        assert required in options
    bound = {options[i + 1] for i, option in enumerate(options) if option in ("--bind", "--ro-bind", "--ro-bind-try")}
    assert str(Path.home()) not in bound and "/" not in bound and "/run" not in bound
    assert argv[-3:] == ["--", "opencode", "serve"]


@pytest.mark.parametrize("workdir", ["HOME", "STATE"])
def test_a_workspace_that_would_show_home_or_state_is_refused(tmp_path: Path, workdir: str) -> None:
    settings = _settings(tmp_path)
    folder = Path.home() if workdir == "HOME" else tmp_path
    settings.backend.workdir = folder
    with pytest.raises(ConfigError, match="would show"):
        Sandbox(settings, None, None).plan([tmp_path / "state" / "opencode"])


def test_the_agents_own_endpoints_are_allowed_and_loopback_ones_forwarded(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        provider={"id": "m", "base_url": "http://127.0.0.1:8765/v1", "models": ["x"]},
        mcp_servers={"docs": {"url": "https://mcp.example.com/mcp"}},
    )
    described = Sandbox(settings, None, None).describe()
    assert described["network"]["allowed"] == ["127.0.0.1:8765", "mcp.example.com:443"]
    assert not (tmp_path / "state").exists(), "describing the sandbox creates nothing"


def test_runtime_hosts_are_let_through_whatever_the_policy() -> None:
    policy = EgressPolicy(set(), None, hosts=["*.example.org", "docs.python.org"])
    assert policy.decide(Destination("files.example.org", 443)).rule == "runtime:hosts"
    assert policy.decide(Destination("docs.python.org", 443)).allowed
    assert not policy.decide(Destination("example.org", 443)).allowed, "*. covers sub-domains only"


async def test_a_deep_state_folder_gets_its_sockets_in_a_short_private_folder(tmp_path: Path) -> None:
    deep = tmp_path / ("a-very-long-folder-name-" * 6)
    settings = _settings(deep)
    sandbox = Sandbox(settings, None, None)
    await sandbox.start()
    try:
        socket = sandbox.served_socket("opencode.sock")
        assert len(str(socket)) < 100 and not str(socket).startswith(str(deep))
        assert oct(socket.parent.parent.stat().st_mode & 0o777) == "0o700"
    finally:
        await sandbox.stop()
    assert not socket.parent.parent.exists(), "removed at stop"


def test_files_that_run_code_outside_tool_calls_are_read_only_without_any_rule(tmp_path: Path) -> None:
    for path in (".git/config", ".git/hooks/pre-commit", "src/.git/config", "opencode.json", "README.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    masked, read_only = denied_paths(None, tmp_path)
    assert masked == []
    assert sorted(p.relative_to(tmp_path).as_posix() for p in read_only) == [".git", "opencode.json", "src/.git"]


def test_a_git_file_binds_the_folders_it_names_read_only(tmp_path: Path) -> None:
    """A worktree's `.git` is a `gitdir:` file; that git dir's `commondir` names the repository's own `.git`."""
    common = tmp_path / "repo" / ".git"
    gitdir = common / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    for folder in (gitdir, common):
        (folder / "HEAD").write_text("ref: refs/heads/main\n")
    workdir = tmp_path / "wt"
    workdir.mkdir()
    (workdir / ".git").write_text(f"gitdir: {gitdir}\n")
    masked, read_only = denied_paths(None, workdir)
    assert (masked, read_only) == ([], [workdir / ".git", gitdir, common])
    (workdir / ".git").unlink()
    (workdir / ".git").symlink_to(tmp_path / "repo" / ".git")  # a link is never bound: that would show its target
    assert denied_paths(None, workdir) == ([], [])
    (workdir / ".git").unlink()
    (workdir / ".git").write_text(f"gitdir: {tmp_path}\n")  # no git dir: another folder is not shown inside
    assert denied_paths(None, workdir) == ([], [workdir / ".git"])


def test_a_read_only_path_gone_since_the_search_is_skipped_not_fatal(tmp_path: Path) -> None:
    """A folder renamed from inside takes its read-only binds' sources with it: bubblewrap would refuse to start."""
    (tmp_path / "sub" / ".git").mkdir(parents=True)
    read_only = [tmp_path / "sub" / ".git", tmp_path / "gone" / ".git"]
    options = SandboxPlan(workdir=tmp_path, writable=[], read_only=read_only, sockets=tmp_path).command(
        Path("bwrap"), ["true"]
    )
    assert str(tmp_path / "sub" / ".git") in options and str(tmp_path / "gone" / ".git") not in options
