"""An agent working in place, in its owner's git checkout, on the real OpenCode in the sandbox: a turn tries every
way to leave code for the owner's next `git status` or `opencode` there, and afterwards the test looks at the disk,
runs git on the host, and reads the task's final status and the audit."""

import asyncio
import base64
import subprocess
from pathlib import Path

import httpx
import pytest

from a2a_wrapper.shield.rules import ShieldConfig
from a2a_wrapper.state.audit import recent
from tests.helpers.a2a_wire import answer_text, final_state, status_text, stream
from tests.helpers.behaviour import BACKENDS, Harness
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

EVERYTHING_ALLOWED = ShieldConfig.model_validate(
    {"defaults": {c: "allow" for c in ("read", "write", "delete", "execute", "network", "mcp", "other")}}
)
GIT_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
HOOKS = '{"version": 1, "hooks": {}}\n'


def attack(marker: Path) -> str:
    """Each way, in one script the rules cannot read (it reaches bash encoded); the first line says whether the
    rename of `.git` was refused, since the model quotes only the start of the output."""
    fsmonitor = f"touch {marker}"
    script = f"""
mv .git moved-git 2>/dev/null && echo git-renamed || echo git-rename-refused
mkdir -p planted && printf '[core]\\n\\tfsmonitor = {fsmonitor}\\n' > planted/config
printf '../planted\\n' > .git/commondir 2>/dev/null
printf '[core]\\n\\tfsmonitor = {fsmonitor}\\n' >> .git/config 2>/dev/null
git init -q sub && git -C sub config core.fsmonitor '{fsmonitor}'
printf '[submodule "sub"]\\n\\tpath = sub\\n\\turl = ./sub\\n' > .gitmodules
mkdir -p .opencode/plugin && echo 'export default async () => ({{}})' > .opencode/plugin/x.js
echo '{{"plugin": ["./x.js"]}}' > opencode.json
mv .github gh && mkdir -p .github/hooks && echo '{{"hooks": {{}}}}' > .github/hooks/x.json
mkdir -p .vscode && echo '{{"tasks": []}}' > .vscode/tasks.json
echo done
"""
    return f"echo {base64.b64encode(script.encode()).decode()} | base64 -d | sh"


def owner_checkout(workdir: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    (workdir / ".git" / "config").write_text(GIT_CONFIG)
    (workdir / ".github" / "hooks").mkdir(parents=True)
    (workdir / ".github" / "hooks" / "hooks.json").write_text(HOOKS)
    (workdir / "README.md").write_text("the owner's\n")


@pytest.fixture
def harness(offline_model, tmp_path: Path, request: pytest.FixtureRequest) -> Harness:  # type: ignore[no-untyped-def]
    opencode = next(backend for backend in BACKENDS if backend.name == "opencode")
    return Harness(opencode, offline_model, tmp_path, request.node)  # type: ignore[arg-type]


async def test_what_a_turn_plants_for_the_owner_is_gone_after_it(harness: Harness, http: httpx.AsyncClient) -> None:
    workdir = harness.tmp_path / "state" / "workspace"
    owner_checkout(workdir)
    marker = harness.tmp_path / "pwned"
    async with harness.serving(shield=EVERYTHING_ALLOWED) as served:
        events = await stream(http, served.jsonrpc, bash_params(attack(marker), description="run a command"))
        assert final_state(events) == "TASK_STATE_COMPLETED", events[-1]
        assert "git-rename-refused" in answer_text(events), "the mount point stays: .git cannot be renamed"
        final = events[-1]["statusUpdate"]["status"]
        repaired = events[-1]["statusUpdate"]["metadata"]["a2a-wrapper"]["controlFiles"]
        backend = served.agent.backend
        await backend.stop()  # the bind sources are all there again: the backend starts as before
        await backend.start()
        again = await stream(http, served.jsonrpc, bash_params("echo again", description="run a command"))
        assert final_state(again) == "TASK_STATE_COMPLETED" and "again" in answer_text(again)
        assert "controlFiles" not in again[-1]["statusUpdate"]["metadata"]["a2a-wrapper"], "the backend's own writes"
        database = served.agent.settings.state_dir / "state.db"  # type: ignore[operator]

    for planted in ("sub/.git", ".gitmodules", ".opencode", "opencode.json", ".github/hooks/x.json", ".vscode"):
        assert not (workdir / planted).exists(), planted
    assert (workdir / ".git" / "config").read_text() == GIT_CONFIG and not (workdir / ".git" / "commondir").exists()
    assert (workdir / ".github" / "hooks" / "hooks.json").read_text() == HOOKS
    assert not (workdir / "moved-git").exists() and (workdir / "README.md").read_text() == "the owner's\n"
    for folder in (workdir, workdir / "sub"):
        git = await asyncio.create_subprocess_exec("git", "-C", str(folder), "status", stdout=subprocess.DEVNULL)
        assert await git.wait() == 0
    assert not marker.exists(), "no planted fsmonitor ran on the host"

    said = status_text(final)
    assert "Control files" in said and "opencode.json" in said and ".gitmodules" in said
    assert set(repaired["removed"]) >= {".gitmodules", ".opencode", "opencode.json", "sub/.git", ".vscode"}
    assert ".github/hooks" in repaired["restored"] and repaired["failed"] == []
    rows = [entry for entry in recent(database, 100) if entry.tool == "control-files"]
    assert {row.target for row in rows} >= {"opencode.json", "sub/.git", ".github/hooks"}
    assert all(row.decision == "deny" and row.decided_by == "after-turn scan" for row in rows)
