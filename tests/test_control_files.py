"""The check after a turn of an agent working in place, on real folders: each row plants what an agent might,
then the repair runs and the test looks at the disk."""

import asyncio
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from a2a_wrapper.sandbox.control_files import repair, snapshot
from a2a_wrapper.sandbox.control_watch import ControlWatch

HOOK = "#!/bin/sh\necho hook\n"
START = {
    ".git/config": "[core]\n\tbare = false\n",
    ".git/hooks/pre-commit": HOOK,
    ".git/objects/ab/cdef": "blob",
    ".github/hooks/hooks.json": '{"version": 1}\n',
    ".github/workflows/ci.yml": "on: push\n",
    ".vscode/settings.json": "{}\n",
    ".opencode/plugin/keep.js": "export default {}\n",
    "README.md": "hello\n",
    "src/main.py": "print(1)\n",
    "nested/.git/objects/12/3456": "blob",
    "fixtures/repo.git/HEAD": "ref: refs/heads/main\n",  # a bare repository of the owner's, a test fixture
    "fixtures/repo.git/config": "[core]\n\tbare = true\n",
    "fixtures/repo.git/objects/ab/cdef": "blob",
    "fixtures/repo.git/refs/heads/main": "0" * 40 + "\n",
}
CONTROL = [".git/config", ".git/hooks/pre-commit", ".github/hooks/hooks.json", ".vscode/settings.json"]
CONTROL += ["fixtures/repo.git/config"]
CONTROL += [".opencode/plugin/keep.js"]  # the rest is not: `.github/workflows` may go where `.github` goes


def write(root: Path, path: str, text: str = "planted\n") -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def rename(old: str, new: str) -> Callable[[Path], None]:
    return lambda root: os.rename(root / old, root / new)


def planted(*paths: str) -> Callable[[Path], None]:
    def plant(root: Path) -> None:
        for path in paths:
            write(root, path)

    return plant


def both(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def run(root: Path) -> None:
        for step in steps:
            step(root)

    return run


ROWS = [
    ("opencode.json", planted("opencode.json"), ["opencode.json"], []),
    ("opencode.jsonc deep", planted("a/b/opencode.jsonc"), ["a/b/opencode.jsonc"], []),
    ("plugin in new folder", planted("sub/.opencode/plugin/x.js"), ["sub/.opencode"], []),
    ("plugin in old folder", planted(".opencode/plugin/x.js"), [".opencode/plugin/x.js"], []),
    ("nested repository", planted("sub/.git/config", ".gitmodules"), [".gitmodules", "sub/.git"], []),
    ("commondir", planted(".git/commondir"), [".git/commondir"], []),
    ("config changed", planted(".git/config"), [], [".git/config"]),
    ("hook added", planted(".git/hooks/post-checkout"), [".git/hooks/post-checkout"], []),
    ("hook removed", lambda root: (root / ".git/hooks/pre-commit").unlink(), [], [".git/hooks/pre-commit"]),
    (".git renamed, a new one written", both(rename(".git", "old"), planted(".git/config")), [".git"], [".git"]),
    ("the folder above a nested .git renamed", rename("nested", "moved"), [], ["nested/.git"]),
    (
        ".github renamed, a new hook written",
        both(rename(".github", "gh"), planted(".github/hooks/evil.json")),
        [".github/hooks"],
        [".github/hooks"],
    ),
    ("copilot hook", planted(".github/hooks/x.json"), [".github/hooks/x.json"], []),
    ("tasks.json", planted(".vscode/tasks.json"), [".vscode/tasks.json"], []),
    ("settings changed", planted(".vscode/settings.json"), [], [".vscode/settings.json"]),
    ("gitdir file", planted("vendor/lib/.git"), ["vendor/lib/.git"], []),
    ("case variant", planted("sub/.GIT/config", "OpenCode.JSON"), ["OpenCode.JSON", "sub/.GIT"], []),
    (
        "every agent's and tool's",
        planted(
            ".gitattributes",
            ".envrc",
            ".mcp.json",
            ".husky/pre-commit",
            ".pre-commit-config.yaml",
            ".devcontainer/devcontainer.json",
            ".devcontainer.json",
            ".claude/settings.json",
            ".codex/config.toml",
            ".gemini/settings.json",
        ),
        [
            ".claude",
            ".codex",
            ".devcontainer",
            ".devcontainer.json",
            ".envrc",
            ".gemini",
            ".gitattributes",
            ".husky",
            ".mcp.json",
            ".pre-commit-config.yaml",
        ],
        [],
    ),
    ("a link named like one", lambda root: (root / "opencode.json").symlink_to("/etc/passwd"), ["opencode.json"], []),
    ("a link for a folder", lambda root: (root / ".claude").symlink_to(root / "src"), [".claude"], []),
    ("a pipe", lambda root: os.mkfifo(root / "opencode.json"), ["opencode.json"], []),
    (
        "a folder replaced by a file",
        lambda root: [os.rename(root / ".opencode", root / "elsewhere"), write(root, ".opencode")],
        [".opencode"],
        [".opencode"],
    ),
    ("instructions and data are the agent's", planted("AGENTS.md", "CLAUDE.md", ".gitignore", ".env", "x.py"), [], []),
    ("git's data is not checked", planted(".git/objects/12/3456", ".git/refs/heads/main"), [], []),
    # folders git takes as a repository whatever their name (HEAD and refs, or HEAD and a commondir)
    (
        "a bare repository",
        planted("vendored/HEAD", "vendored/objects/x", "vendored/refs/x", "vendored/config"),
        ["vendored"],
        [],
    ),
    ("a bare repository deep down", planted("a/b/HEAD", "a/b/refs/heads/x"), ["a/b"], []),
    ("a git dir by its commondir", planted("wt/HEAD", "wt/commondir"), ["wt"], []),
    ("HEAD alone is no git dir", planted("data/HEAD", "data/config"), [], []),
    (
        "an owner's folder made one",
        planted("src/HEAD", "src/refs/x", "src/config"),
        ["src/HEAD", "src/config", "src/refs"],
        [],
    ),
    ("the workspace made one", planted("HEAD", "refs/heads/x", "config"), ["HEAD", "config", "refs"], []),
    ("a bare repository's config changed", planted("fixtures/repo.git/config"), [], ["fixtures/repo.git/config"]),
    ("a bare repository's hook added", planted("fixtures/repo.git/hooks/x"), ["fixtures/repo.git/hooks"], []),
    (
        "one in a bare repository's objects",
        planted("fixtures/repo.git/objects/x/HEAD", "fixtures/repo.git/objects/x/refs/y"),
        ["fixtures/repo.git/objects/x"],
        [],
    ),
    (
        "a bare repository's data is not checked",
        planted("fixtures/repo.git/objects/12/3456", "fixtures/repo.git/HEAD"),
        [],
        [],
    ),
]


@pytest.mark.parametrize(("attack", "removed", "restored"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_what_a_turn_planted_is_removed_and_what_it_changed_is_restored(
    tmp_path: Path, attack: Callable[[Path], None], removed: list[str], restored: list[str]
) -> None:
    root = tmp_path / "ws"
    for path, text in START.items():
        write(root, path, text)
    (root / ".git/hooks/pre-commit").chmod(0o755)
    before = snapshot(root)
    attack(root)
    done = repair(root, before, snapshot(root))
    assert (done.removed, sorted(done.restored), done.failed) == (removed, sorted(restored), [])
    for path in CONTROL:
        assert (root / path).read_text() == START[path], path
    assert os.stat(root / ".git/hooks/pre-commit").st_mode & 0o777 == 0o755
    assert (root / ".git/objects/ab/cdef").exists() and (root / "nested/.git/objects/12/3456").exists(), "moved back"
    assert (root / "src/main.py").read_text() == START["src/main.py"], "the owner's files stay"
    after = snapshot(root)
    assert after.found.keys() == before.found.keys()
    assert all(before.found[path].same(after.found[path]) for path in before.found)
    assert not repair(root, before, after), "nothing left to repair"
    assert Path("/etc/passwd").exists()


def test_a_git_dir_planted_anywhere_runs_nothing_for_the_owners_git(tmp_path: Path) -> None:
    """The owner's own `git status` in and under each folder git would take as a repository: after the repair
    none runs the fsmonitor a turn planted (and before it, each did: the shape is git's, not a guess)."""
    root, marker = tmp_path / "ws", tmp_path / "ran"
    write(root, "README.md", "hello\n")
    write(root, "src/main.py", "print(1)\n")
    before = snapshot(root)
    config = f"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch {marker}\n\tworktree = ..\n\tbare = false\n"
    for folder in ("vendored", "src", "a/b"):
        write(root, f"{folder}/HEAD", "ref: refs/heads/main\n")
        (root / folder / "objects").mkdir()
        (root / folder / "refs/heads").mkdir(parents=True)
        write(root, f"{folder}/config", config)
    places = ["vendored", "vendored/objects", "src", "a/b/refs"]
    assert all(_fsmonitor_ran(root / place, marker) for place in places), "the planted repositories work"
    done = repair(root, before, snapshot(root))
    assert not done.failed, done.failed
    assert not any(_fsmonitor_ran(root / place, marker) for place in ["", "src", "a"]), done
    assert (root / "src/main.py").read_text() == "print(1)\n"


def _fsmonitor_ran(folder: Path, marker: Path) -> bool:
    marker.unlink(missing_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(folder), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(folder), "status"], env=env, capture_output=True, check=False)
    return marker.exists()


def test_nothing_is_written_through_a_link(tmp_path: Path) -> None:
    """A folder on the way to a file to restore, replaced by a link to elsewhere: the restore refuses."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    write(root, ".github/hooks/hooks.json", "{}")
    outside.mkdir()
    before = snapshot(root)
    os.rename(root / ".github", root / "gh")
    (root / ".github").symlink_to(outside)
    done = repair(root, before, snapshot(root))
    assert done.restored == [] and done.failed and all("a link or a file stands where" in f for f in done.failed)
    assert list(outside.iterdir()) == []
    assert "could not repair" in done.sentence()


def test_a_big_control_file_changed_is_removed(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, ".vscode/big.json", "x" * (2 << 20))
    before = snapshot(root)
    write(root, ".vscode/big.json", "y" * (2 << 20))
    done = repair(root, before, snapshot(root))
    assert done.removed == [".vscode/big.json"] and not (root / ".vscode/big.json").exists()


async def test_turns_at_once_share_the_first_snapshot(tmp_path: Path) -> None:
    """A file one turn plants while another runs is removed when either ends, never taken as a starting point;
    once no turn runs, what the owner changes is the next starting point."""
    root = tmp_path / "ws"
    write(root, "README.md")
    watch = ControlWatch(root, "agent", None)
    async with asyncio.timeout(30):
        await watch.begin()  # turn A
        write(root, "opencode.json")  # A plants
        await watch.begin()  # turn B starts after it
        assert (await watch.end("c", "b", "")).removed == ["opencode.json"]
        write(root, ".mcp.json")
        assert (await watch.end("c", "a", "")).removed == [".mcp.json"]
        write(root, ".envrc", "use nix\n")  # the owner, between turns
        await watch.begin()
        assert not await watch.end("c", "c", "")
    assert (root / ".envrc").read_text() == "use nix\n"


async def test_a_workspace_gone_during_a_turn_is_said_not_raised(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, ".envrc")
    watch = ControlWatch(root, "agent", None)
    async with asyncio.timeout(30):
        await watch.begin()
        os.rename(root, tmp_path / "elsewhere")
        done = await watch.end("c", "t", "")
    assert done.failed and "could not be read" in done.failed[0] and "could not repair" in done.sentence()
