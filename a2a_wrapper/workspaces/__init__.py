"""A workspace per task: each context works in its own copy of the project, made and read by the wrapper outside
the sandbox; its change leaves as a patch, per-file diffs and, when configured, a branch of the source."""

from a2a_wrapper.workspaces.baseline import Change, FileChange
from a2a_wrapper.workspaces.folders import Workspaces, served_settings
from a2a_wrapper.workspaces.git import WorkspaceError

__all__ = ["Change", "FileChange", "WorkspaceError", "Workspaces", "served_settings"]

__all__ = ["Change", "FileChange", "WorkspaceError", "Workspaces", "served_settings"]
