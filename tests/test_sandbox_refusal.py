"""A machine that cannot sandbox refuses to start the agent with a sentence; `process` runs it, with a warning.

The machines are real: `a2a-wrap` is run inside an outer bubblewrap that takes away what the sandbox needs
(user namespaces; the bwrap binaries), the way a locked-down host or container would.
"""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from a2a_wrapper.agent import agent_sandbox
from a2a_wrapper.config.backends import OpenCodeSettings
from a2a_wrapper.config.runtimes import ProcessRuntime
from a2a_wrapper.config.settings import AgentSettings, CardSettings
from a2a_wrapper.frontend.metrics import AgentMetrics
from a2a_wrapper.permissions.policy import Policy
from a2a_wrapper.sandbox.bubblewrap import find_bwrap
from a2a_wrapper.state.audit import AuditLog

pytestmark = pytest.mark.slow


def _config(tmp_path: Path) -> Path:
    config = {
        "card": {"name": "boxed"},
        "server": {"port": 0},
        "backend": {"kind": "opencode", "workdir": str(tmp_path / "ws")},
        "state_dir": str(tmp_path / "state"),
        "auto_approve": True,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _serve_in(outer: list[str], config: Path) -> subprocess.CompletedProcess[str]:
    """`a2a-wrap --config CONFIG` inside bubblewrap with `outer` options on top of the whole host."""
    bwrap = find_bwrap()
    command = [str(bwrap), "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *outer, "--"]
    command += [sys.executable, "-m", "a2a_wrapper", "--config", str(config)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, env=dict(os.environ))


def test_without_user_namespaces_the_start_fails_and_says_what_to_do(tmp_path: Path) -> None:
    result = _serve_in(["--unshare-user", "--disable-userns"], _config(tmp_path))
    assert result.returncode != 0
    assert "bubblewrap cannot build one here" in result.stderr and "user namespaces" in result.stderr
    assert "runtime: {kind: process}" in result.stderr, "the way out is named"
    assert not list((tmp_path / "state").glob("tenants/*/opencode")), "nothing was started"


def test_without_bubblewrap_the_start_fails_and_says_how_to_get_it(tmp_path: Path) -> None:
    hidden = [str(find_bwrap())] + [path for path in ("/usr/bin/bwrap", "/bin/bwrap") if Path(path).exists()]
    masks = [option for path in hidden for option in ("--ro-bind", "/dev/null", path)]
    result = _serve_in(masks, _config(tmp_path))
    assert result.returncode != 0
    assert "bubblewrap (bwrap) is not found" in result.stderr and "apt-get install bubblewrap" in result.stderr


async def test_the_process_runtime_warns_at_every_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = AgentSettings(
        card=CardSettings(name="unboxed"),
        backend=OpenCodeSettings(workdir=tmp_path / "ws"),
        runtime=ProcessRuntime(),
        state_dir=tmp_path,
    )
    with caplog.at_level(logging.WARNING, logger="a2a_wrapper.agent"):
        for _ in range(2):
            async with agent_sandbox(settings, Policy.auto_approving(True), AuditLog(None), AgentMetrics()) as sandbox:  # type: ignore[arg-type]
                assert sandbox is None
    warnings = [r.getMessage() for r in caplog.records if "runs unsandboxed" in r.getMessage()]
    assert len(warnings) == 2 and "[unboxed]" in warnings[0]
