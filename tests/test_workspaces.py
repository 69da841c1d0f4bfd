"""Per-task workspaces, without a backend: the copy, the change as diffs and a patch, the branch, and an agent's
planted git configuration, hooks, filters and `commondir`, none of which the wrapper runs."""

from pathlib import Path

import pytest

from a2a_wrapper.config.settings import AgentSettings, CardSettings
from a2a_wrapper.config.workspace import WorkspaceSettings
from a2a_wrapper.state.sessions import ContextKey
from a2a_wrapper.workspaces import WorkspaceError, Workspaces, served_settings
from tests.helpers.projects import git_project, run, tree

A = ContextKey("alice", "ctx-a")
B = ContextKey("alice", "ctx-b")


def git_source(folder: Path) -> Path:
    return git_project(folder, {"app.py": b"print('one')\n", "data.bin": bytes(range(256))})


def workspaces(tmp_path: Path, source: Path, **workspace: object) -> Workspaces:
    settings = AgentSettings(
        card=CardSettings(name="w"),
        state_dir=tmp_path / "state",
        workspace=WorkspaceSettings(mode="per_task", source=source, **workspace),
    )
    made = Workspaces(served_settings(settings))
    made.check()
    return made


def plant(copy: Path, marker: Path) -> None:
    """What an agent that wants the wrapper to run its command writes into its copy."""
    command = f"touch {marker}"
    with (copy / ".git" / "config").open("a") as config:
        config.write(
            f"[core]\n\tfsmonitor = {command}\n[diff]\n\texternal = {command}\n"
            f'[filter "evil"]\n\tclean = {command}\n\tsmudge = {command}\n\tprocess = {command}\n'
            f'[diff "evil"]\n\ttextconv = {command}\n\tcommand = {command}\n'
        )
    for hook in ("pre-commit", "post-commit", "reference-transaction", "post-index-change", "fsmonitor-watchman"):
        path = copy / ".git" / "hooks" / hook
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"#!/bin/sh\n{command}\n")
        path.chmod(0o755)
    elsewhere = copy.parent / "planted-common"
    (elsewhere / "hooks").mkdir(parents=True)
    (elsewhere / "config").write_text(f"[core]\n\tfsmonitor = {command}\n\thooksPath = {elsewhere / 'hooks'}\n")
    (copy / ".git" / "commondir").write_text(str(elsewhere))
    (copy / ".gitattributes").write_text("* filter=evil diff=evil\n")
    nested = copy / "sub"
    nested.mkdir()
    run("git", "init", "-q", cwd=nested)
    (nested / ".git" / "config").write_text(f"[core]\n\tfsmonitor = {command}\n\trepositoryformatversion = 0\n")
    (nested / "inner.txt").write_text("inner\n")


async def test_each_context_has_its_own_copy_and_the_source_is_untouched(tmp_path: Path) -> None:
    source = git_source(tmp_path / "project")
    before = tree(source)
    spaces = workspaces(tmp_path, source)
    copy_a, copy_b = await spaces.open(A), await spaces.open(B)
    assert copy_a != copy_b and (copy_a / ".git").is_dir()
    (copy_a / "app.py").write_text("print('two')\n")
    (copy_a / "new.txt").write_text("hello\n")
    assert (copy_b / "app.py").read_text() == "print('one')\n"
    change = await spaces.change(A)
    assert change is not None and sorted(f.path for f in change.files) == ["app.py", "new.txt"]
    assert "+print('two')" in next(f.diff for f in change.files if f.path == "app.py")
    assert await spaces.change(B) == type(change)("", ())
    assert tree(source) == before
    fresh = tmp_path / "fresh"
    run("git", "clone", "-q", str(source), str(fresh), cwd=tmp_path)
    run("git", "apply", "--check", cwd=fresh, stdin=change.patch)
    assert await spaces.open(A) == copy_a and (copy_a / "new.txt").exists()  # found again, not made anew


async def test_planted_configuration_runs_nothing_and_the_patch_still_comes(tmp_path: Path) -> None:
    source = git_source(tmp_path / "project")
    git_before = tree(source / ".git")
    marker = tmp_path / "ran"
    spaces = workspaces(tmp_path, source, branch="a2a/")
    copy = await spaces.open(A)
    plant(copy, marker)
    (copy / "app.py").write_text("print('changed')\n")
    change = await spaces.change(A)
    assert not marker.exists(), "the wrapper ran a command the agent planted"
    assert change is not None and change.branch is not None
    assert "+print('changed')" in change.patch
    branch_files = run("git", "ls-tree", "-r", "--name-only", change.branch, cwd=source).split()
    assert "app.py" in branch_files and ".gitattributes" in branch_files
    assert run("git", "show", f"{change.branch}:app.py", cwd=source) == "print('changed')\n"
    assert not marker.exists()
    git_after = tree(source / ".git")
    new = {path for path in git_after if path not in git_before}
    assert all(path.startswith(("objects/", "refs/heads/a2a/", "logs/")) for path in new), new
    assert {path: git_after[path] for path in git_before if not path.startswith("logs/")} == {
        path: content for path, content in git_before.items() if not path.startswith("logs/")
    }
    run("git", "fsck", "--strict", cwd=source)


async def test_a_plain_copy_keeps_links_as_links_and_skips_special_files(tmp_path: Path) -> None:
    source = tmp_path / "plain"
    source.mkdir()
    (source / "a.txt").write_text("a\n")
    (source / "out").symlink_to("/etc/hostname")
    run("mkfifo", "pipe", cwd=source)
    spaces = workspaces(tmp_path, source)
    copy = await spaces.open(A)
    assert (copy / "out").is_symlink() and not (copy / "pipe").exists()
    (copy / "a.txt").write_text("b\n")
    change = await spaces.change(A)
    assert change is not None and [f.path for f in change.files] == ["a.txt"]
    await spaces.remove(A)
    assert not copy.exists() and await spaces.change(A) is None


@pytest.mark.parametrize(
    ("workspace", "message"),
    [
        ({"mode": "elsewhere"}, "mode"),
        ({"copy": "rsync"}, "copy"),
        ({"branch": "bad..name"}, "'bad..name' is not a git branch prefix"),
        ({"branch": True}, "branch"),
    ],
)
def test_bad_workspace_settings_name_key_and_value(workspace: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WorkspaceSettings.model_validate(workspace)


def test_a_newcomer_works_per_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("A2A_WRAP_WORKSPACE__MODE", raising=False)
    assert AgentSettings(card=CardSettings(name="n")).workspace.mode == "per_task"


def test_a_plain_copy_refuses_a_state_folder_inside_its_source(tmp_path: Path) -> None:
    settings = AgentSettings(
        card=CardSettings(name="w"),
        state_dir=tmp_path / "state",
        workspace=WorkspaceSettings(mode="per_task", source=tmp_path, copy_with="copy"),
    )
    with pytest.raises(WorkspaceError, match=r"inside workspace\.source"):
        Workspaces(served_settings(settings)).check()
