"""Backend adapters: each turns one coding agent's protocol into StreamEvents."""

from typing import Protocol

from a2a_wrapper.backends.base import Backend, Capabilities, Session, Turn
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.sandbox import Sandbox


class _Adapter(Protocol):
    capabilities: Capabilities

    def __call__(self, settings: AgentSettings, sandbox: Sandbox | None) -> Backend: ...


def create_backend(settings: AgentSettings, sandbox: Sandbox | None = None) -> Backend:
    """The adapter named by the config's `backend.kind`; its processes run in `sandbox` when the runtime is one."""
    return _adapter(settings.backend.kind)(settings, sandbox)


def capabilities_of(kind: str) -> Capabilities:
    """What the adapter of `kind` can do, known before any of its processes starts."""
    return _adapter(kind).capabilities


def _adapter(kind: str) -> _Adapter:
    if kind == "copilot":
        from a2a_wrapper.backends.copilot.backend import CopilotBackend

        return CopilotBackend
    if kind == "claude":
        from a2a_wrapper.backends.claude.backend import ClaudeBackend

        return ClaudeBackend
    if kind == "opencode2":
        from a2a_wrapper.backends.opencode2.backend import OpenCode2Backend

        return OpenCode2Backend
    if kind == "gemini":
        from a2a_wrapper.backends.gemini.backend import GeminiBackend

        return GeminiBackend
    if kind == "acp":
        from a2a_wrapper.backends.acp.backend import AcpBackend

        return AcpBackend
    from a2a_wrapper.backends.opencode.backend import OpenCodeBackend

    return OpenCodeBackend


__all__ = ["Backend", "Session", "Turn", "capabilities_of", "create_backend"]
