"""A context's change as a branch of the source repository, made by the wrapper.

The commit is made in the wrapper's baseline repository (baseline.py), on top of the commit the copy started from
(or of the branch's last commit); its new objects go into the source repository by `unpack-objects`, and the
branch is set by `update-ref`, only if it is where the wrapper last left it. git reads the source repository's
config (its format, its extensions: the owner's, never the agent's), but hooks are off on the command line and
these commands run no filter, fsmonitor or other program.
"""

from pathlib import Path

from a2a_wrapper.workspaces.baseline import Baseline, Start
from a2a_wrapper.workspaces.git import WorkspaceError, git


async def source_objects(source: Path, home: Path) -> Path:
    """The source repository's git folder (the common one, for a linked work tree)."""
    found = await git(
        ["-C", str(source), "rev-parse", "--path-format=absolute", "--git-common-dir"], home=home, cwd=home
    )
    return Path(found.decode().strip())


async def publish(baseline: Baseline, git_dir: Path, branch: str, tree: str) -> Start:
    """Puts `tree` on `branch` in the repository at `git_dir`, as a commit after the last one published; the start
    with that commit recorded (unchanged when the tree is the last one published, or the start's)."""
    start = baseline.start()
    if start.commit is None:
        raise WorkspaceError("the source repository had no commit when the workspace was made: no branch can hold it")
    parent = start.published or start.commit
    if tree == await _tree_of(baseline, parent):
        return start
    commit = await baseline.commit(tree, parent, f"a2a-wrapper: the change of {branch}")
    pack = await baseline.pack(commit, parent)
    home = baseline.folder
    await git(["--git-dir", str(git_dir), "unpack-objects", "-q"], home=home, cwd=home, stdin=pack)
    old = start.published or ""  # "": the branch must not exist yet
    await git(["--git-dir", str(git_dir), "update-ref", f"refs/heads/{branch}", commit, old], home=home, cwd=home)
    published = Start(start.tree, start.commit, commit)
    baseline.save(published)
    return published


async def _tree_of(baseline: Baseline, commit: str) -> str:
    found = await git(["--git-dir", str(baseline.repo), "rev-parse", f"{commit}^{{tree}}"], home=baseline.folder,
                      cwd=baseline.folder)  # fmt: skip
    return found.decode().strip()
