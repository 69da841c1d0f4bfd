"""A context's copy of the project, made by the wrapper outside the sandbox: a git clone, or a plain copy.

A clone: `git clone --no-hardlinks` with no template (no sample hooks), so the copy shares no file with the source
and its `.git` is its own; nothing of the source's config is copied into it. A plain copy: links copied as links
(never followed, so nothing outside the tree is read), special files (sockets, FIFOs, devices) skipped, and no
`.git` (a git project is cloned instead: its config may hold a remote's credentials).
"""

import asyncio
import os
import shutil
import stat
from pathlib import Path

from a2a_wrapper.workspaces.git import WorkspaceError, git


def is_git_work_tree(source: Path) -> bool:
    return (source / ".git").exists()


async def clone(source: Path, copy: Path, *, home: Path) -> str | None:
    """Clones `source` into `copy`; the commit the copy starts from (None for a repository with no commit yet)."""
    await git(["clone", "-q", "--no-hardlinks", "--template=", "--", str(source), str(copy)], home=home, cwd=home)
    try:
        head = await git(["--git-dir", str(copy / ".git"), "rev-parse", "--verify", "-q", "HEAD"], home=home, cwd=home)
    except WorkspaceError:
        return None  # an empty repository: the copy starts from nothing
    return head.decode().strip()


async def plain_copy(source: Path, copy: Path) -> None:
    """Copies `source` into `copy` as described above."""
    try:
        await asyncio.to_thread(shutil.copytree, source, copy, symlinks=True, ignore=_left_out)
    except (OSError, shutil.Error) as exc:
        raise WorkspaceError(f"could not copy {source} to the context's workspace: {exc}") from exc


def _left_out(folder: str, names: list[str]) -> set[str]:
    """`.git`, and anything neither a folder, a regular file nor a link."""
    left = set()
    for name in names:
        mode = os.lstat(os.path.join(folder, name)).st_mode
        if name == ".git" or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            left.add(name)
    return left
