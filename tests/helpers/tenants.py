"""Behind an agent's tenant pool: the anonymous caller's backend (the only one without auth) and a session's id
as that backend knows it, for tests that use the backend's own API (OpenCode's HTTP routes, its process)."""

from pathlib import Path
from typing import Any

from a2a_wrapper.agent import RunningAgent
from a2a_wrapper.backends.tenants import TenantPool
from a2a_wrapper.backends.tenants.folders import TENANTS, split, tenant_id


def sole_backend(agent: RunningAgent) -> Any:
    """The backend of the anonymous caller, running (without auth it starts with the agent)."""
    assert isinstance(agent.backend, TenantPool)
    backend = agent.backend.backend_of("")
    assert backend is not None, "the anonymous caller's backend is not running"
    return backend


def own_session_id(session_id: str) -> str:
    """A session id the pool handed out, as the backend that made it knows it."""
    return split(session_id)[1]


def anonymous_state(state_dir: Path) -> Path:
    """The state folder of the anonymous caller's backend under the agent's `state_dir`."""
    return state_dir / TENANTS / tenant_id("")
