"""The one seam every permission request passes through: a request in, a decision out.

For now the config's `auto_approve` decides; the shield (rules, asking a person) plugs in here.
"""

from dataclasses import dataclass
from typing import Literal, Protocol

from a2a_wrapper.events import Permission


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Literal["allow", "deny", "ask"]
    reason: str  # a sentence; for a deny, the model sees it
    rule: str


class PermissionPolicy(Protocol):
    def decide(self, request: Permission) -> Decision: ...


class AutoApprove:
    """Allows every request, or denies every request with a sentence the model can act on."""

    def __init__(self, allow: bool) -> None:
        self._allow = allow

    def decide(self, request: Permission) -> Decision:
        if self._allow:
            return Decision("allow", f"{request.tool} allowed: autoApprove is on", "autoApprove: true")
        return Decision(
            "deny",
            f"The operator does not allow the {request.tool} tool for this agent (autoApprove is off). "
            "Do not retry it; answer with what you can do without it.",
            "autoApprove: false",
        )
