"""Backend adapters: each turns one coding agent's protocol into StreamEvents."""

from a2a_wrapper.backends.base import Backend, Session, Turn
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.sandbox import Sandbox


def create_backend(settings: AgentSettings, sandbox: Sandbox | None = None) -> Backend:
    """The adapter named by the config's `backend.kind`; its processes run in `sandbox` when the runtime is one."""
    kind = settings.backend.kind
    if kind == "copilot":
        from a2a_wrapper.backends.copilot.backend import CopilotBackend

        return CopilotBackend(settings, sandbox)
    if kind == "acp":
        from a2a_wrapper.backends.acp.backend import AcpBackend

        return AcpBackend(settings, sandbox)
    from a2a_wrapper.backends.opencode.backend import OpenCodeBackend

    return OpenCodeBackend(settings, sandbox)


__all__ = ["Backend", "Session", "Turn", "create_backend"]
