"""What the shield answers for one permission request: allow, deny (with a sentence the model sees) or ask;
and the shape of anything that decides (`PermissionPolicy`)."""

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
