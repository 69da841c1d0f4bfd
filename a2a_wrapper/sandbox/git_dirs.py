"""Folders git takes as a repository of their own, whatever their name: the shape of git's is_git_directory().

git (setup.c, `is_git_directory`) takes a folder as a git directory when it holds a valid `HEAD` (a file `ref:
refs/…` or an object id, or a link into `refs/`) and its common directory — the folder a `commondir` file in it
names, else the folder itself — holds `objects` (unless GIT_OBJECT_DIRECTORY names another) and `refs`. While
looking for a repository, git tries each folder from the current one upwards, first `FOLDER/.git`, then FOLDER
itself; with `safe.bareRepository` at its default (`all`), a folder of that shape is used, its config with it:
a `core.fsmonitor` (or pager, alias, hook) there runs at the owner's next `git status` in or under it.

The check here decides on entry names only, never following or reading what an agent wrote, and so takes a
little more than git does: a `HEAD` of any kind and content, and either `refs` or a `commondir` (which may name
a common directory elsewhere, the owner's own among them, whose objects and refs are real). `objects` is not
required: a GIT_OBJECT_DIRECTORY in the owner's environment makes git skip it. Names are compared loosely (case
folded), as the control files are: `head` is `HEAD` on a case-insensitive disk.
"""

from collections.abc import Collection

from a2a_wrapper.shield.classes import loose

# In a git directory: what git runs code from (fsmonitor, pager, aliases, hooks, drivers, another git dir)
CODE = frozenset(
    loose(name) for name in ("config", "config.worktree", "commondir", "gitdir", "hooks", "info", "attributes")
)
_HEAD, _REFS, _COMMONDIR = loose("HEAD"), loose("refs"), loose("commondir")
# The names that decide the shape, and the code: what a folder that became a git directory must lose
NAMES = CODE | {_HEAD, _REFS, loose("objects")}


def is_git_dir(names: Collection[str]) -> bool:
    """Whether a folder holding entries of these (loose) names may be a git directory to git."""
    return _HEAD in names and (_REFS in names or _COMMONDIR in names)
