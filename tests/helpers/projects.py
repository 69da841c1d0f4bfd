"""A small git project for workspace tests, and what its folders hold, byte for byte."""

import subprocess
from pathlib import Path


def run(*argv: str, cwd: Path, stdin: str | None = None) -> str:
    return subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True, input=stdin).stdout


def git_project(folder: Path, files: dict[str, bytes]) -> Path:
    """A git work tree in `folder` with `files` committed on `main`."""
    folder.mkdir()
    run("git", "init", "-q", "-b", "main", cwd=folder)
    for name, content in files.items():
        (folder / name).write_bytes(content)
    run("git", "add", "-A", cwd=folder)
    run("git", "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "start", cwd=folder)
    return folder


def tree(folder: Path) -> dict[str, bytes]:
    """Every file below `folder` and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
