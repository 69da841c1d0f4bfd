"""A context's starting point, kept by the wrapper where the agent cannot reach it, and the change against it.

The baseline is a bare repository of the wrapper's (outside the sandbox) whose index starts as the copy's first
state: the cloned commit, or the plain copy's files. After a turn the copy's files are added to that index (the
copy only as a work tree: its own `.git` is never read, see git.py) and compared with the starting tree: one
`git diff --binary` patch of the whole change, and a unified diff per changed file. A clone's baseline borrows
the source's objects (`objects/info/alternates`), so a branch can be made on top of the commit it started from.
"""

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path

from a2a_wrapper.workspaces.git import WorkspaceError, git

MAX_FILE_DIFFS = 200  # per-file artifacts after one turn; the patch always holds the whole change
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the copy's root
    diff: str  # unified diff


@dataclass(frozen=True)
class Change:
    """The copy's change against its starting point."""

    patch: str  # `git diff --binary` of the whole change: `git apply` takes it in a clone of the source
    files: tuple[FileChange, ...]
    branch: str | None = None  # the source's branch holding it, when configured
    left_out: tuple[str, ...] = ()  # nested repositories (a folder holding a `.git`): never read, not in the patch


@dataclass(frozen=True)
class Start:
    tree: str  # the starting tree
    commit: str | None  # the source's commit a clone started from
    published: str | None = None  # the last commit put on the source's branch

    def to_json(self) -> str:
        return json.dumps({"tree": self.tree, "commit": self.commit, "published": self.published})

    @classmethod
    def from_json(cls, text: str) -> "Start":
        data = json.loads(text)
        return cls(str(data["tree"]), data.get("commit"), data.get("published"))


class Baseline:
    """The wrapper's repository for one context: `folder/repo.git` and `folder/start.json`."""

    def __init__(self, folder: Path, copy: Path) -> None:
        self.folder = folder
        self.copy = copy
        self.repo = folder / "repo.git"
        self._start_file = folder / "start.json"

    @property
    def exists(self) -> bool:
        return self._start_file.is_file()

    def start(self) -> Start:
        try:
            return Start.from_json(self._start_file.read_text())
        except (OSError, ValueError, KeyError) as exc:
            raise WorkspaceError(f"the workspace's starting point {self._start_file} is unreadable: {exc}") from exc

    def save(self, start: Start) -> None:
        partial = self._start_file.with_suffix(".partial")
        partial.write_text(start.to_json())
        partial.replace(self._start_file)

    async def create(self, commit: str | None, objects: Path | None) -> None:
        """Records the copy's state now as its starting point (`commit`, found in `objects`, for a clone)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        await self._git("init", "-q", "--bare", "--template=", str(self.repo))
        if commit is not None and objects is not None:
            (self.repo / "objects" / "info").mkdir(parents=True, exist_ok=True)
            (self.repo / "objects" / "info" / "alternates").write_text(f"{objects}\n")
            await self._git("--git-dir", str(self.repo), "read-tree", commit)
            tree = await self._git("--git-dir", str(self.repo), "rev-parse", f"{commit}^{{tree}}")
        else:
            await self._add()
            tree = await self._git("--git-dir", str(self.repo), "write-tree")
        self.save(Start(tree, commit))

    async def change(self) -> tuple[Start, str, Change]:
        """The change now: (the start, the tree now, the change)."""
        start = self.start()
        left_out = await self._add()
        now = await self._git("--git-dir", str(self.repo), "write-tree")
        diff = ["--git-dir", str(self.repo), "diff", "--cached", "--no-ext-diff", "--no-textconv"]
        patch = await self._git(*diff, "--binary", "--full-index", start.tree, strip=False)
        names = await self._git(*diff, "--name-only", "-z", start.tree, strip=False)
        files = []
        for path in [name for name in names.split("\0") if name][:MAX_FILE_DIFFS]:
            text = await self._git(*diff, start.tree, "--", f":(literal){path}", strip=False)
            files.append(FileChange(path, text))
        return start, now, Change(patch, tuple(files), left_out=left_out)

    async def commit(self, tree: str, parent: str, message: str) -> str:
        return await self._git("--git-dir", str(self.repo), "commit-tree", tree, "-p", parent, "-m", message)

    async def pack(self, commit: str, since: str) -> bytes:
        """The objects of `commit` that `since` lacks, as a pack."""
        revs = f"{commit}\n^{since}\n".encode()
        return await git(
            ["--git-dir", str(self.repo), "pack-objects", "-q", "--revs", "--stdout"], home=self.folder,
            cwd=self.folder, stdin=revs,
        )  # fmt: skip

    async def _add(self) -> tuple[str, ...]:
        """The copy's files now, into the wrapper's index (ignored files stay out, as `git add -A` leaves them);
        nested repositories are left out (git would read their `.git` to record them); returns them."""
        nested = await asyncio.to_thread(nested_repositories, self.copy)
        excluded = [f":(exclude,literal){path}" for path in nested]
        # Run in the copy: with --git-dir given, git looks for no repository there (its `.git` is not read).
        repo = ["--git-dir", str(self.repo), "--work-tree", str(self.copy)]
        await self._git(*repo, "add", "-A", "--", ".", *excluded, cwd=self.copy)
        return nested

    async def _git(self, *args: str, strip: bool = True, cwd: Path | None = None) -> str:
        out = (await git(args, home=self.folder, cwd=cwd or self.folder)).decode("utf-8", errors="replace")
        return out.strip() if strip else out


def nested_repositories(copy: Path) -> tuple[str, ...]:
    """Folders below the copy's root that hold a `.git` (a folder or a file), relative to it; links not followed."""
    found = []
    for folder, folders, files in os.walk(copy):
        if folder != str(copy) and (".git" in folders or ".git" in files):
            found.append(os.path.relpath(folder, copy))
            folders.clear()
            continue
        if ".git" in folders:
            folders.remove(".git")
    return tuple(sorted(found))
