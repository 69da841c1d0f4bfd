"""What the shield answers for one permission request: allow, deny (with a sentence the model sees) or ask."""

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Literal["allow", "deny", "ask"]
    reason: str  # a sentence; for a deny, the model sees it
    rule: str
