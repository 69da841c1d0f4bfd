"""Backend adapters: each turns one coding agent's protocol into StreamEvents."""

from a2a_wrapper.backends.base import Backend, Session, Turn
from a2a_wrapper.config import AgentSettings


def create_backend(settings: AgentSettings) -> Backend:
    """The adapter named by the config's `backend.kind`."""
    kind = settings.backend.kind
    if kind == "copilot":
        from a2a_wrapper.backends.copilot.backend import CopilotBackend

        return CopilotBackend(settings)
    if kind == "acp":
        from a2a_wrapper.backends.acp.backend import AcpBackend

        return AcpBackend(settings)
    from a2a_wrapper.backends.opencode.backend import OpenCodeBackend

    return OpenCodeBackend(settings)


__all__ = ["Backend", "Session", "Turn", "create_backend"]
