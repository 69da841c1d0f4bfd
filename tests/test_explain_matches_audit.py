"""`a2a-wrap shield explain`, the audit and the disk tell the same story of one real conversation.

A real OpenCode agent on the offline model, in its sandbox, runs a few commands under rules (one allowed, one
denied by a rule, two the rules cannot see into); then, for every decision the audit holds, `shield explain`
with the same config and command must name the same decision and rule, and the workspace must show that
exactly the allowed command ran.
"""

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.state.audit import recent
from tests.conftest import SettingsFactory, serving
from tests.helpers.a2a_wire import final_state, stream
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

SHIELD = {
    "defaults": {"execute": "deny", "delete": "deny", "write": "deny"},
    "rules": [
        {"name": "listing", "decision": "allow", "class": ["execute", "write"], "commands": ["ls *", "touch ran.txt"]},
        {"name": "no-rm", "decision": "deny", "commands": ["rm *"], "reason": "Nothing is deleted here."},
    ],
}
COMMANDS = ["touch ran.txt", "rm -f keep.txt", "ls -${_@P}", ">README.md"]


def config_file(settings: AgentSettings, path: Path) -> Path:
    """The agent's settings as a config file for the CLI (the same workspace, state and rules)."""
    backend: Any = settings.backend
    config = {
        "card": {"name": settings.card.name},
        "backend": {
            "kind": "opencode",
            "binary": str(backend.binary),
            "workdir": str(backend.workdir),
            "model": backend.model,
            "provider": {**backend.provider.model_dump(mode="json"), "api_key": "not-needed"},
        },
        "state_dir": str(settings.state_dir),
        "shield": SHIELD,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def explain(config: Path, command: str) -> str:
    argv = [sys.executable, "-m", "a2a_wrapper", "shield", "explain", "--config", str(config), "--tool", "bash"]
    result = subprocess.run([*argv, "--command", command], capture_output=True, text=True, timeout=60, check=True)
    return result.stdout.splitlines()[0]


async def test_the_audit_explain_and_the_disk_agree(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    settings = make_settings(shield=SHIELD)
    workdir = settings.backend.workdir
    workdir.mkdir(parents=True)
    (workdir / "keep.txt").write_text("kept")
    (workdir / "README.md").write_text("readme")
    async with serving(settings, offline_model) as served:
        for command in COMMANDS:
            events = await stream(http, served.jsonrpc, bash_params(command, description="run a command"))
            assert final_state(events) == "TASK_STATE_COMPLETED"
    rows = [entry for entry in reversed(recent(settings.state_dir / "state.db", 100)) if entry.tool != "egress"]  # type: ignore[operator]
    assert [row.target for row in rows] == COMMANDS, "one decision per call, in order"
    config = config_file(settings, tmp_path / "agent.yaml")
    for row in rows:
        assert explain(config, row.target) == f"decision: {row.decision} (rule {row.rule})", row
    assert [row.decision for row in rows] == ["allow", "deny", "deny", "deny"]
    assert (workdir / "ran.txt").exists(), "the allowed command ran"
    assert (workdir / "keep.txt").read_text() == "kept" and (workdir / "README.md").read_text() == "readme"
