"""The shield: permission requests decided by rules (allow, ask, deny), pure and failing closed.

    shield = Shield(settings.shield, workspace, operator=operator_rules)  # config.files.load_operator_rules
    shield.decide(request)                          # -> Decision (PermissionPolicy)
    shield.for_context(rules).decide(request)       # with a context's "always" rules
    shield.always_rule(request, "always-1")         # the narrowest rule for a person's "always"
    explain(shield, request)                        # -> Explanation; format_explanation(...) prints it
    format_table(rules, defaults=shield.defaults)   # the rules as a table

Modules: classes (kind -> class, common tool names, destructive commands), shell (lexer), commands (compound
commands taken apart), writes (the files commands write by options and operands), paths, hosts, globs, rules
(the `shield:` section), floor (operator rules are a floor), items (a request taken apart), matching, engine
(Shield), explain (sentences and tables). It imports only events, errors, sections and text_table; the
operator's rules file is read by config.files.load_operator_rules.
"""

from a2a_wrapper.shield.classes import CLASSES, COMMON_TOOL_NAMES, KIND_CLASSES, Class, Outcome, kind_class, tool_names
from a2a_wrapper.shield.engine import BUILT_IN_DEFAULTS, Shield, explain
from a2a_wrapper.shield.explain import Explanation, Step, format_explanation, format_table
from a2a_wrapper.shield.items import classify
from a2a_wrapper.shield.rules import Defaults, Rule, ShieldConfig, ShieldError, parse_shield

__all__ = [
    "BUILT_IN_DEFAULTS",
    "CLASSES",
    "COMMON_TOOL_NAMES",
    "KIND_CLASSES",
    "Class",
    "Defaults",
    "Explanation",
    "Outcome",
    "Rule",
    "Shield",
    "ShieldConfig",
    "ShieldError",
    "Step",
    "classify",
    "explain",
    "format_explanation",
    "format_table",
    "kind_class",
    "parse_shield",
    "tool_names",
]
