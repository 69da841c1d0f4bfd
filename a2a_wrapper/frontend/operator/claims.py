"""First answer wins: who answered each recent approval (the caller, an operator in the console, the deadline).

An answer claims its request before it acts on the turn, in one step on the loop: every later answer, from
wherever it comes, is refused with a sentence naming the first. The memory is bounded; an id it forgot, and
that no turn waits on, is unknown.
"""

from collections import OrderedDict
from dataclasses import dataclass

DEADLINE = "deadline"


@dataclass(frozen=True, slots=True)
class Claim:
    approval: str  # the id of the approval (or question) answered
    who: str  # "caller:NAME" ("caller" without auth), "console:NAME", or "deadline"
    option: str  # allow_once, allow_context, deny; "answer" for a question

    def refusal(self) -> str:
        if self.who == DEADLINE:
            return f"Approval {self.approval} expired unanswered ({self.option})."
        return f"Approval {self.approval} was already answered by {self.who} ({self.option})."


class Claims:
    def __init__(self, keep: int = 1000) -> None:
        self._claims: OrderedDict[str, Claim] = OrderedDict()
        self._keep = keep

    def claim(self, claim: Claim) -> Claim | None:
        """Records `claim` as the answer to its approval, or returns the earlier one (then nothing changes)."""
        earlier = self._claims.get(claim.approval)
        if earlier is not None:
            return earlier
        self._claims[claim.approval] = claim
        if len(self._claims) > self._keep:
            self._claims.popitem(last=False)
        return None

    def get(self, approval_id: str) -> Claim | None:
        return self._claims.get(approval_id)
