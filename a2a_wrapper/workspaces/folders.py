"""Each context's workspace: made when its session is first opened, kept across restarts, removed with it.

Under the agent's state folder, by caller and context (names hashed: a caller's or a context's name never becomes
a path):
- `workspaces/CALLER/CONTEXT/`: the copy the backend works in; `workspaces/` is what the sandbox binds writable
  (the backend's workdir), and the source is not bound at all;
- `workspace-baselines/CALLER/CONTEXT/`: the wrapper's starting point and its repository, never bound.
"""

import asyncio
import hashlib
import logging
import shutil
from pathlib import Path

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.state.sessions import ContextKey
from a2a_wrapper.workspaces import branches, copies
from a2a_wrapper.workspaces.baseline import Baseline, Change
from a2a_wrapper.workspaces.git import WorkspaceError

log = logging.getLogger(__name__)

COPIES = "workspaces"
BASELINES = "workspace-baselines"


def copies_root(state_dir: Path) -> Path:
    return state_dir / COPIES


def served_settings(settings: AgentSettings) -> AgentSettings:
    """The settings the backend and its sandbox are made from: in per-task mode their workdir is the folder of
    the copies, never the source."""
    if settings.workspace.mode != "per_task":
        return settings
    assert settings.state_dir is not None
    source = settings.workspace.source or settings.backend.workdir
    root = copies_root(settings.backend_root)
    backend = settings.backend.model_copy(update={"workdir": root})
    workspace = settings.workspace.model_copy(update={"source": source})
    return settings.model_copy(update={"backend": backend, "workspace": workspace})


def _hashed(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:24]


def caller_folder(caller: str) -> str:
    """The name of a caller's folder of copies; the backend pool names the caller's backend (its tenant) the same,
    and binds that folder alone into the caller's sandbox (backends/tenants/folders.py)."""
    return hashlib.sha256(caller.encode("utf-8", "surrogateescape")).hexdigest()[:12]


class Workspaces:
    """The per-task workspaces of one agent (from `served_settings`)."""

    def __init__(self, settings: AgentSettings) -> None:
        assert settings.state_dir is not None and settings.workspace.source is not None
        self._source = settings.workspace.source
        self._copy_with = settings.workspace.copy_with
        self._branch = settings.workspace.branch
        self._copies = copies_root(settings.backend_root)
        self._baselines = settings.state_dir / BASELINES
        self._making: dict[ContextKey, asyncio.Lock] = {}

    def check(self) -> None:
        """At the start: a source that cannot give a copy (or a branch) stops the agent with one sentence."""
        self._source.mkdir(parents=True, exist_ok=True)  # as backend.workdir is: an empty project to start with
        self._copies.mkdir(parents=True, exist_ok=True)
        self._baselines.mkdir(parents=True, exist_ok=True, mode=0o700)
        git = copies.is_git_work_tree(self._source)
        if self._copy_with == "clone" and not git:
            raise WorkspaceError(f"workspace.copy: clone needs a git work tree; {self._source} is none")
        if not self._clones and self._copies.resolve().is_relative_to(self._source.resolve()):
            raise WorkspaceError(
                f"state_dir: the copies' folder {self._copies} is inside workspace.source {self._source}, which a "
                "plain copy would copy into itself; put the state folder elsewhere"
            )
        if self._branch is not False and not (git and self._copy_with != "copy"):
            raise WorkspaceError(f"workspace.branch: {self._branch!r} needs workspace.copy: clone of a git source")

    def folder(self, key: ContextKey) -> Path:
        return self._copies / caller_folder(key.caller) / _hashed(key.context_id)

    def _baseline(self, key: ContextKey) -> Baseline:
        return Baseline(self._baselines / caller_folder(key.caller) / _hashed(key.context_id), self.folder(key))

    async def open(self, key: ContextKey) -> Path:
        """The context's copy: the one it has (kept across restarts), else a new one."""
        baseline = self._baseline(key)
        if baseline.exists and baseline.copy.is_dir():
            return baseline.copy
        lock = self._making.setdefault(key, asyncio.Lock())
        async with lock:  # one context's turns come one at a time; a lock all the same, never two copies at once
            if not (baseline.exists and baseline.copy.is_dir()):
                await self._make(baseline)
        return baseline.copy

    async def _make(self, baseline: Baseline) -> None:
        await asyncio.to_thread(_remove, baseline.copy, baseline.folder)  # what a stopped run left half made
        baseline.copy.parent.mkdir(parents=True, exist_ok=True)
        baseline.folder.mkdir(parents=True, mode=0o700)
        if self._clones:
            commit = await copies.clone(self._source, baseline.copy, home=baseline.folder)
            objects = await branches.source_objects(self._source, baseline.folder) / "objects"
            await baseline.create(commit, objects)
        else:
            await copies.plain_copy(self._source, baseline.copy)
            await baseline.create(None, None)
        log.info("made workspace %s (%s of %s)", baseline.copy, "clone" if self._clones else "copy", self._source)

    @property
    def _clones(self) -> bool:
        return self._copy_with == "clone" or (self._copy_with is None and copies.is_git_work_tree(self._source))

    async def change(self, key: ContextKey) -> Change | None:
        """The context's change since its copy was made (on its branch too, when configured); None without a copy."""
        baseline = self._baseline(key)
        if not baseline.exists:
            return None
        start, tree, change = await baseline.change()
        if self._branch is False or (tree == start.tree and start.published is None):
            return change
        name = f"{self._branch}{_hashed(key.context_id)[:12]}"
        git_dir = await branches.source_objects(self._source, baseline.folder)
        await branches.publish(baseline, git_dir, name, tree)
        return Change(change.patch, change.files, branch=name)

    async def remove(self, key: ContextKey) -> None:
        """The context's session ended: its copy and starting point go."""
        baseline = self._baseline(key)
        self._making.pop(key, None)
        await asyncio.to_thread(_remove, baseline.copy, baseline.folder)
        log.info("removed workspace %s", baseline.copy)


def _remove(*folders: Path) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
