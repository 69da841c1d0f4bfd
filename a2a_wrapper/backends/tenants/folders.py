"""Where a caller's backend keeps its state, and how its session ids say whose they are.

A caller's name never becomes a path: its backend's folder is named by a stable short digest of the name. The
pool hands out session ids qualified by that id (`<tenant>:<the backend's own id>`), so that a stored session
names the only backend it means anything to.
"""

import hashlib
import re

from a2a_wrapper.config.settings import AgentSettings

TENANTS = "tenants"  # under the agent's state folder: one folder per caller
_ID_LENGTH = 12  # hex digits: 48 bits, against a handful of configured callers
_QUALIFIED = re.compile(rf"([0-9a-f]{{{_ID_LENGTH}}}):(.+)", re.DOTALL)


def tenant_id(caller: str) -> str:
    """The caller's stable short id: the name of its backend's folder and the prefix of its sessions' ids."""
    return hashlib.sha256(caller.encode("utf-8", "surrogateescape")).hexdigest()[:_ID_LENGTH]


def tenant_settings(settings: AgentSettings, tenant: str) -> AgentSettings:
    """The agent's settings for one caller's backend: the same, but its own state folder."""
    assert settings.state_dir is not None
    return settings.model_copy(update={"state_dir": settings.state_dir / TENANTS / tenant})


def qualified(tenant: str, session_id: str) -> str:
    return f"{tenant}:{session_id}"


def split(session_id: str) -> tuple[str | None, str]:
    """(tenant, the backend's own id); no tenant for an id not made by the pool (one stored by an older version)."""
    found = _QUALIFIED.fullmatch(session_id)
    return (found.group(1), found.group(2)) if found else (None, session_id)
