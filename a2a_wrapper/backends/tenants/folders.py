"""Where a caller's backend keeps its state, and how its session ids say whose they are.

A caller's name never becomes a path: its backend's folder is named by a stable short digest of the name. The
pool hands out session ids qualified by that id (`<tenant>:<the backend's own id>`), so that a stored session
names the only backend it means anything to.
"""

import re

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.workspaces.folders import caller_folder

TENANTS = "tenants"  # under the agent's state folder (a sidecar's runtime.folders): one folder per caller
_ID_LENGTH = len(caller_folder(""))  # hex digits
_QUALIFIED = re.compile(rf"([0-9a-f]{{{_ID_LENGTH}}}):(.+)", re.DOTALL)


def tenant_id(caller: str) -> str:
    """The caller's stable short id: the name of its backend's folder and the prefix of its sessions' ids (and of
    the folder of its per-task copies: workspaces/folders.py)."""
    return caller_folder(caller)


def tenant_settings(settings: AgentSettings, tenant: str) -> AgentSettings:
    """The agent's settings for one caller's backend: the same, but its own state folder, and per task its own
    folder of copies as the workdir (its sandbox binds the copies of this caller's contexts only)."""
    assert settings.state_dir is not None
    update: dict[str, object] = {"state_dir": settings.backend_root / TENANTS / tenant}
    if settings.workspace.mode == "per_task":
        update["backend"] = settings.backend.model_copy(update={"workdir": settings.backend.workdir / tenant})
    return settings.model_copy(update=update)


def qualified(tenant: str, session_id: str) -> str:
    return f"{tenant}:{session_id}"


def split(session_id: str) -> tuple[str | None, str]:
    """(tenant, the backend's own id); no tenant for an id not made by the pool (one stored by an older version)."""
    found = _QUALIFIED.fullmatch(session_id)
    return (found.group(1), found.group(2)) if found else (None, session_id)
