"""Control files after a turn: what the turn created is removed, what it changed or removed is put back.

An agent working in place shares its folder with its owner, whose next `git status` or `opencode` there runs
what the control files (shield/protected.py) say. The sandbox binds those that exist at start read-only; this
catches the rest — a new nested `.git`, a `.gitmodules`, an `opencode.json` that was absent, a folder of any
name that git takes as a repository of its own (git_dirs.py) — by comparing the tree at the turn's end with a
snapshot taken at its start.

The walk runs in the wrapper, outside the sandbox. It opens every folder relative to its parent's descriptor
with O_NOFOLLOW, so a link swapped in during the walk is never followed; it reads only regular control files,
into memory (they are small: the copy it restores from); it runs nothing it finds. Removing and restoring go
through the same descriptors: nothing is written through a link. Inside a `.git` folder it looks only at what
git runs code from (its config, hooks, `commondir`, `gitdir`, attributes), not at the objects; a git directory of
another name is walked whole (it is no mount point, a turn may write anywhere in it), its code entries checked.
"""

import errno
import functools
import os
import secrets
import stat
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from a2a_wrapper.sandbox import git_dirs
from a2a_wrapper.shield.classes import loose
from a2a_wrapper.shield.globs import path_matches
from a2a_wrapper.shield.protected import CONTROL_FILES

WALK_LIMIT = 200_000  # entries; a workspace bigger than this is not searched further (said in the log, the task)
COPY_LIMIT = 1 << 20  # bytes of one control file kept to restore it; a bigger one changed is removed
_SEGMENTS = frozenset(loose(s) for pattern in CONTROL_FILES for s in pattern.split("/") if "*" not in s)
_GIT = loose(".git")
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

Kind = Literal["file", "folder", "link", "other"]


@dataclass(frozen=True, slots=True)
class Found:
    """What stood at a control path: its kind, mode and identity, and its bytes (a link: its target)."""

    kind: Kind
    mode: int
    identity: tuple[int, ...]  # (size, mtime_ns, ctime_ns, inode): equal means unchanged, without reading
    content: bytes | None  # a file's bytes up to COPY_LIMIT, a link's target; None: too big to keep

    def same(self, other: "Found") -> bool:
        if (self.kind, stat.S_IMODE(self.mode)) != (other.kind, stat.S_IMODE(other.mode)):
            return False
        if self.kind in ("folder", "other"):
            return True  # a folder's own entries are compared one by one
        return self.identity == other.identity or (self.content is not None and self.content == other.content)


@dataclass
class Snapshot:
    found: dict[str, Found]  # path relative to the workspace -> what stood there
    complete: bool  # False: the walk stopped at WALK_LIMIT entries
    folders: dict[int, str] = field(default_factory=dict)  # every folder's inode -> its path: where one went
    # folders of git's shape (git_dirs.py) not otherwise control paths, the workspace's root ("") included -> inode
    git_dirs: dict[str, int] = field(default_factory=dict)
    git_names: dict[str, frozenset[str]] = field(default_factory=dict)  # a folder -> its entries named in NAMES


@dataclass
class Repair:
    """What the scan after a turn did, for the task, the audit and the log."""

    removed: list[str] = field(default_factory=list)  # created by the turn (or changed, with no copy to restore)
    restored: list[str] = field(default_factory=list)  # changed or removed by the turn, put back as they were
    failed: list[str] = field(default_factory=list)  # sentences: what could not be repaired, and why
    complete: bool = True

    def __bool__(self) -> bool:
        return bool(self.removed or self.restored or self.failed or not self.complete)

    def sentence(self) -> str:
        parts = []
        if self.removed:
            parts.append(f"removed what the turn created or changed: {', '.join(self.removed)}")
        if self.restored:
            parts.append(f"restored what the turn changed or removed: {', '.join(self.restored)}")
        if self.failed:
            parts.append(f"could not repair: {'; '.join(self.failed)}")
        if not self.complete:
            parts.append(f"checked only the first {WALK_LIMIT} entries of the workspace")
        return (
            "Control files (they make code run at the owner's next git or agent command in this folder) "
            f"were repaired after the turn: {'; '.join(parts)}."
        )

    def data(self) -> dict[str, Any]:
        return {"removed": self.removed, "restored": self.restored, "failed": self.failed, "complete": self.complete}


def snapshot(root: Path) -> Snapshot:
    """Every control path under `root` and what stands there, breadth first (shallow ones before the limit)."""
    taken = Snapshot({}, complete=True)
    root_fd = os.open(root, _DIRECTORY)
    try:
        taken.folders[os.fstat(root_fd).st_ino] = ""
        _walk(root_fd, taken)
        return taken
    finally:
        os.close(root_fd)


def repair(root: Path, before: Snapshot, after: Snapshot) -> Repair:
    """Puts `root`'s control paths back as `before` found them: what is new is removed (the topmost new path of
    each), what changed or went missing is written back from the copy, folders first. A control folder moved
    elsewhere in the tree (a renamed `.git`, or the folder above it renamed) is moved back, with all it holds."""
    done = Repair(complete=before.complete and after.complete)
    moves = _moves_back(before, after)
    if moves:
        _move_back(root, moves, done)
        after = snapshot(root)
    created = {path for path in after.found if path not in before.found}
    made, kept = _made_git_dirs(before, after)
    created = {path for path in created if not _held(path, kept, after)} | made
    topmost = sorted(path for path in created if not any(folder in created for folder in _folders(path)))
    changed = [path for path, was in before.found.items() if path in after.found and not was.same(after.found[path])]
    missing = sorted(path for path in before.found if path not in after.found)
    root_fd = os.open(root, _DIRECTORY)
    try:
        for path in topmost:
            _attempt(done, path, functools.partial(_remove, root_fd, path), done.removed)
        for path in sorted([*changed, *missing], key=lambda p: p.count("/")):  # folders before what they hold
            was = before.found[path]
            if was.kind == "other" or (was.kind != "folder" and was.content is None):
                _attempt(done, path, functools.partial(_remove, root_fd, path), done.removed)
            else:
                _attempt(done, path, functools.partial(_restore, root_fd, path, was), done.restored)
    finally:
        os.close(root_fd)
    return done


def _made_git_dirs(before: Snapshot, after: Snapshot) -> tuple[set[str], set[str]]:
    """(what goes, what stays) of the folders git takes as its own directory now and did not at the turn's start.
    A folder the turn made goes whole (it is among the control paths created). A folder that was there (under
    any name: found by its inode) goes back to what it held by the names that make the shape: what the turn
    added of them goes (its HEAD, refs, config, …), the folder and what it held by them before stay, and so is
    no git directory any more."""
    made: set[str] = set()
    kept: set[str] = set()
    for path, inode in after.git_dirs.items():
        was = before.folders.get(inode)
        if was is None or was in before.git_dirs:
            continue  # new: removed whole with the created; or git's shape at the start too: compared as it was
        held = {loose(name) for name in before.git_names.get(was, ())}
        for name in after.git_names.get(path, ()):
            entry = f"{path}/{name}" if path else name
            (kept if loose(name) in held else made).add(entry)
        kept.add(path)
    return made, kept


def _held(path: str, kept: set[str], after: Snapshot) -> bool:
    """Whether `path` is a control path only as part of what a folder that became a git directory held before
    (its own `config` or `hooks/`, which that folder's repair leaves to it), not one on its own."""
    if path in kept:
        return True
    inside = any(folder in kept for folder in _folders(path))
    return inside and path not in after.git_dirs and not is_control(path, path.rsplit("/", 1)[-1])


def _moves_back(before: Snapshot, after: Snapshot) -> dict[str, str]:
    """Control folders gone from their place (or replaced by another folder) -> where the same folder is now."""
    moves: dict[str, str] = {}
    for path, was in sorted(before.found.items()):
        if was.kind != "folder" or any(folder in moves for folder in _folders(path)):
            continue
        now = after.found.get(path)
        went = after.folders.get(was.identity[3])
        if (now is None or now.identity[3] != was.identity[3]) and went is not None and went != path:
            moves[path] = went
    return moves


def _move_back(root: Path, moves: dict[str, str], done: Repair) -> None:
    root_fd = os.open(root, _DIRECTORY)
    try:
        for path, went in moves.items():
            if _exists(root_fd, path):  # what the turn put in its place
                _attempt(done, path, functools.partial(_remove, root_fd, path), done.removed)
            _attempt(done, path, functools.partial(_rename_back, root_fd, went, path), done.restored)
    finally:
        os.close(root_fd)


def _rename_back(root_fd: int, went: str, path: str) -> None:
    source_fd, source = _parent(root_fd, went, create=False)
    try:
        target_fd, target = _parent(root_fd, path, create=True)
        try:
            os.rename(source, target, src_dir_fd=source_fd, dst_dir_fd=target_fd)
        finally:
            os.close(target_fd)
    finally:
        os.close(source_fd)


def _exists(root_fd: int, path: str) -> bool:
    try:
        fd, name = _parent(root_fd, path, create=False)
    except OSError:
        return False
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)
    return True


def _attempt(done: Repair, path: str, action: Callable[[], None], into: list[str]) -> None:
    try:
        action()
    except OSError as exc:
        done.failed.append(f"{path}: {exc.strerror or exc}")
    else:
        into.append(path)


def _folders(path: str) -> Iterator[str]:
    """`a/b/c` -> `a/b`, `a`."""
    while "/" in path:
        path = path.rpartition("/")[0]
        yield path


def _walk(root_fd: int, taken: Snapshot) -> None:
    """Each entry of the tree into `taken` (control paths with what stands there), breadth first, up to WALK_LIMIT.
    Each folder is opened from the root one name at a time, never through a link (one swapped in since it was
    listed is not followed), and closed before the next: a wide tree holds no pile of descriptors."""
    seen = 0
    queue: deque[tuple[str, bool]] = deque([("", False)])  # a folder to list, and whether it is a control path
    while queue:
        folder, control = queue.popleft()
        try:
            fd = _open_folder(root_fd, folder)
        except OSError:
            continue  # gone, or no longer a folder
        try:
            with os.scandir(fd) as listing:
                entries = list(listing)
            git_dir = not control and _note_git_names(taken, folder, fd, entries)
            in_git = bool(folder) and loose(folder.rsplit("/", 1)[-1]) == _GIT
            for entry in entries:
                if in_git and loose(entry.name) not in git_dirs.CODE:
                    continue  # objects, refs, logs: data, not code
                if seen >= WALK_LIMIT:
                    taken.complete = False
                    return
                seen += 1
                path = f"{folder}/{entry.name}" if folder else entry.name
                controls = control or is_control(path, entry.name) or (git_dir and loose(entry.name) in git_dirs.CODE)
                if controls:
                    taken.found[path] = _read(fd, entry)
                if entry.is_dir(follow_symlinks=False):
                    taken.folders[entry.inode()] = path
                    queue.append((path, controls))
        finally:
            os.close(fd)


def _note_git_names(taken: Snapshot, folder: str, fd: int, entries: list[os.DirEntry[str]]) -> bool:
    """Records the folder's entries that make a git directory; whether it is one (its code then control paths,
    and the folder itself one, unless it is the root)."""
    names = frozenset(entry.name for entry in entries if loose(entry.name) in git_dirs.NAMES)
    if names:
        taken.git_names[folder] = names
    if not git_dirs.is_git_dir({loose(name) for name in names}):
        return False
    info = os.fstat(fd)
    taken.git_dirs[folder] = info.st_ino
    if folder:
        identity = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        taken.found[folder] = Found("folder", info.st_mode, identity, None)
    return True


def is_control(path: str, name: str) -> bool:
    """Whether `path` (relative to the workspace; `name` its last part) is a control file or folder."""
    if loose(name) not in _SEGMENTS:
        return False  # most entries: one set lookup
    absolute = "/" + path
    return any(path_matches(pattern, absolute, "/", folded=True) for pattern in CONTROL_FILES)


def _read(dir_fd: int, entry: os.DirEntry[str]) -> Found:
    info = entry.stat(follow_symlinks=False)
    identity = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    if stat.S_ISLNK(info.st_mode):
        return Found("link", info.st_mode, identity, os.fsencode(os.readlink(entry.name, dir_fd=dir_fd)))
    if stat.S_ISDIR(info.st_mode):
        return Found("folder", info.st_mode, identity, None)
    if not stat.S_ISREG(info.st_mode):
        return Found("other", info.st_mode, identity, None)
    return Found("file", info.st_mode, identity, _content(dir_fd, entry.name, info.st_size))


def _content(dir_fd: int, name: str, size: int) -> bytes | None:
    return read_regular(name, COPY_LIMIT, dir_fd) if size <= COPY_LIMIT else None


def read_regular(path: str | Path, limit: int, dir_fd: int | None = None) -> bytes | None:
    """A regular file's bytes (None past `limit`), opened without following a link or waiting on a pipe; None
    for anything else (a folder, a pipe or a device swapped in since it was listed, or nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = b""
        while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
            data += chunk
        return data if len(data) <= limit else None
    finally:
        os.close(fd)


def _open_folder(root_fd: int, folder: str, create: bool = False) -> int:
    """A descriptor of `folder` (relative; the caller closes it), reached one name at a time without following a
    link; missing folders made when `create`."""
    fd = os.dup(root_fd)
    for name in folder.split("/") if folder else ():
        try:
            try:
                child = os.open(name, _DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o755, dir_fd=fd)
                child = os.open(name, _DIRECTORY, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise OSError(exc.errno, f"a link or a file stands where the folder {name!r} was") from exc
            raise
        finally:
            os.close(fd)
        fd = child
    return fd


def _parent(root_fd: int, path: str, create: bool) -> tuple[int, str]:
    folder, _, name = path.rpartition("/")
    return _open_folder(root_fd, folder, create), name


def _remove(root_fd: int, path: str) -> None:
    fd, name = _parent(root_fd, path, create=False)
    try:
        _remove_at(fd, name)
    finally:
        os.close(fd)


def _remove_at(dir_fd: int, name: str) -> None:
    """Removes `name` in `dir_fd`, a folder with all it holds, never following a link."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    fd = os.open(name, _DIRECTORY, dir_fd=dir_fd)
    try:
        for child in os.listdir(fd):
            _remove_at(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dir_fd)


def _restore(root_fd: int, path: str, was: Found) -> None:
    fd, name = _parent(root_fd, path, create=True)
    try:
        if was.kind == "folder":
            _restore_folder(fd, name, was.mode)
            return
        assert was.content is not None
        spare = f".a2a-wrapper-restore-{secrets.token_hex(6)}"
        if was.kind == "link":
            os.symlink(os.fsdecode(was.content), spare, dir_fd=fd)
        else:
            _write_new(fd, spare, was.content, stat.S_IMODE(was.mode))
        try:
            existing = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            _remove_at(fd, name)  # a folder where the file was: replace cannot go over it
        os.replace(spare, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


def _restore_folder(dir_fd: int, name: str, mode: int) -> None:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=dir_fd)  # a file or a link where the folder was
        info = None
    if info is None:
        os.mkdir(name, stat.S_IMODE(mode), dir_fd=dir_fd)
    else:
        os.chmod(name, stat.S_IMODE(mode), dir_fd=dir_fd, follow_symlinks=False)


def _write_new(dir_fd: int, name: str, content: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as file:
        file.write(content)
        os.fchmod(fd, mode)
