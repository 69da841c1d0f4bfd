"""The agent's permission policy, from its config: the shield when rules are given, else autoApprove."""

from a2a_wrapper.config import AgentSettings
from a2a_wrapper.permissions import AutoApprove, PermissionPolicy
from a2a_wrapper.shield import Shield, ShieldConfig, load_operator_rules


def build_policy(settings: AgentSettings) -> PermissionPolicy:
    """Raises ShieldError (naming the rules) when the agent's rules try to loosen the operator's floor."""
    if settings.shield is None and settings.operator_rules is None:
        return AutoApprove(settings.auto_approve)
    operator = load_operator_rules(settings.operator_rules) if settings.operator_rules else None
    return Shield(settings.shield or ShieldConfig(), settings.backend.workdir, operator)
