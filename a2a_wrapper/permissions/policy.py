"""The agent's permission policy, from its config: the shield when rules are given, else autoApprove."""

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.events import Permission
from a2a_wrapper.shield import Shield, ShieldConfig, load_operator_rules
from a2a_wrapper.shield.decision import Decision, PermissionPolicy


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


def build_policy(settings: AgentSettings) -> PermissionPolicy:
    """Raises ShieldError (naming the rules) when the agent's rules try to loosen the operator's floor."""
    if settings.shield is None and settings.operator_rules is None:
        return AutoApprove(settings.auto_approve)
    operator = load_operator_rules(settings.operator_rules) if settings.operator_rules else None
    return Shield(settings.shield or ShieldConfig(), settings.backend.workdir, operator)
