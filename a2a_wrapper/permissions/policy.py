"""The agent's one permission policy, from its config: a shield of rules, or autoApprove's answer for all.

`auto_approve: true / false` is a shield whose defaults allow / deny every class. Its decisions keep the words
the model and the audit have always seen ("autoApprove is off", rule `autoApprove: false`), and it answers every
request at once, without the shield's rules: an allow-all shield would still deny its built-in protected files
and ask for paths outside the workspace, which autoApprove never did. That thin layer is this module's; the
shield itself is untouched.
"""

from collections.abc import Sequence
from pathlib import Path

from a2a_wrapper.config.files import load_operator_rules
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.events import Permission
from a2a_wrapper.shield import CLASSES, Defaults, Rule, Shield, ShieldConfig
from a2a_wrapper.shield.decision import Decision


class Policy:
    """Decides every permission request (`decide`), with a context's "always" rules (`for_context`)."""

    def __init__(self, shield: Shield, auto_approve: bool | None = None) -> None:
        self.shield = shield
        self.auto_approve = auto_approve  # set: every request answered so, by no rule

    @classmethod
    def auto_approving(cls, allow: bool, workspace: Path | str = ".") -> "Policy":
        """autoApprove: a shield whose every class defaults to allow (or deny); it consults no path."""
        outcome = "allow" if allow else "deny"
        defaults = Defaults.model_validate(dict.fromkeys(CLASSES, outcome))
        return cls(Shield(ShieldConfig(defaults=defaults), workspace), auto_approve=allow)

    @property
    def rules_decide(self) -> bool:
        """Whether the shield's rules decide (autoApprove allows tool calls, never hosts: only rules do)."""
        return self.auto_approve is None

    @property
    def ask_timeout(self) -> float:
        return self.shield.ask_timeout

    def decide(self, request: Permission) -> Decision:
        if self.auto_approve is None:
            return self.shield.decide(request)
        if self.auto_approve:
            return Decision("allow", f"{request.tool} allowed: autoApprove is on", "autoApprove: true")
        return Decision(
            "deny",
            f"The operator does not allow the {request.tool} tool for this agent (autoApprove is off). "
            "Do not retry it; answer with what you can do without it.",
            "autoApprove: false",
        )

    def for_context(self, rules: Sequence[Rule]) -> "Policy":
        """This policy plus a context's own rules (a person's "always"); they never beat a deny."""
        return Policy(self.shield.for_context(rules), self.auto_approve) if rules else self

    def always_rule(self, request: Permission, name: str) -> Rule:
        """The narrowest rule a person's "always" for this request adds to its context."""
        return self.shield.always_rule(request, name)


def build_policy(settings: AgentSettings) -> Policy:
    """Raises ShieldError (naming the rules) when the agent's rules try to loosen the operator's floor."""
    if settings.shield is None and settings.operator_rules is None:
        return Policy.auto_approving(settings.auto_approve, settings.backend.workdir)
    operator = load_operator_rules(settings.operator_rules) if settings.operator_rules else None
    return Policy(Shield(settings.shield or ShieldConfig(), settings.backend.workdir, operator))
