"""The shield: every permission request decided by rules, allow / ask / deny, failing closed.

Layers of rules: the built-in protection of files that run code outside tool calls (protected.py), the
operator's (a floor for every agent), the agent's, and a context's (a person's
"always"). For each item of a request (each command part, or its own target):
  1. any matching deny rule, of any layer: deny;
  2. else a matching context allow: allow (a person already said "always" here, so it answers an ask);
  3. else any matching ask: ask; any matching allow: allow;
  4. else the default of the item's class, raised to ask when it names a path outside the workspace.
Across the items deny beats ask beats allow. An item that cannot be checked (unparseable command, NUL
byte, bad URL, a command with no text) is denied, and so is any request whose checking raises. An item
with a word known only at run time, or an option the shield cannot judge, matches no allow rule
(matching.py): it is asked or denied as rules and defaults say.

Built-in defaults: read allow, write ask, delete ask, execute ask, network ask, mcp ask, other deny;
anything outside the workspace at least ask. An agent's defaults may be stricter than the operator's,
never looser; a class neither sets keeps the built-in default.
"""

import copy
import logging
from collections.abc import Sequence
from pathlib import Path

from a2a_wrapper.events import Permission
from a2a_wrapper.shield.classes import CLASSES, Class, Outcome
from a2a_wrapper.shield.decision import Decision
from a2a_wrapper.shield.explain import Explanation, Step, decision_for
from a2a_wrapper.shield.floor import check_floor
from a2a_wrapper.shield.globs import escape
from a2a_wrapper.shield.items import Item, classify, items_of
from a2a_wrapper.shield.matching import inside, matches
from a2a_wrapper.shield.paths import Workspace
from a2a_wrapper.shield.protected import PROTECTED
from a2a_wrapper.shield.rules import Rule, ShieldConfig, ShieldError

logger = logging.getLogger(__name__)

BUILT_IN_DEFAULTS: dict[Class, Outcome] = {
    "read": "allow",
    "write": "ask",
    "delete": "ask",
    "execute": "ask",
    "network": "ask",
    "mcp": "ask",
    "other": "deny",
}
_PRECEDENCE: tuple[tuple[Outcome, frozenset[str] | None], ...] = (
    ("deny", None),
    ("allow", frozenset({"context"})),
    ("ask", None),
    ("allow", None),
)


class Shield:
    """Implements PermissionPolicy: `decide(request) -> Decision`."""

    def __init__(self, config: ShieldConfig, workspace: Path | str, operator: ShieldConfig | None = None) -> None:
        check_floor(operator, config)
        self._workspace = Workspace(workspace)
        self._layers: tuple[tuple[str, tuple[Rule, ...]], ...] = (
            ("operator", operator.rules if operator else ()),
            ("agent", config.rules),
            ("built-in", (PROTECTED,)),  # after the others: a deny of theirs names the policy the user wrote
        )
        layers = [c for c in (config, operator) if c is not None]
        self.defaults: dict[Class, Outcome] = {
            cls: next((o for c in layers if (o := getattr(c.defaults, cls))), BUILT_IN_DEFAULTS[cls]) for cls in CLASSES
        }
        self.ask_timeout = min(c.ask_timeout for c in layers)

    @property
    def rules(self) -> tuple[tuple[str, Rule], ...]:
        """Every rule with its layer (`operator`, `agent`, `built-in`, `context`), in the order they are consulted."""
        return tuple((layer, rule) for layer, rules in self._layers for rule in rules)

    def for_context(self, rules: Sequence[Rule]) -> "Shield":
        """This shield plus a context's own rules (a person's "always"); they never beat a deny."""
        shield = copy.copy(self)
        shield._layers = (*self._layers[:3], ("context", tuple(rules)))
        return shield

    def decide(self, request: Permission) -> Decision:
        try:
            decision = self.explain(request).decision
        except Exception:  # the boundary of one request: whatever breaks is a deny
            logger.exception("shield: checking permission request %s (%s) failed; denied", request.id, request.tool)
            return Decision(
                "deny",
                f"The shield could not check this {request.tool} request. Do not retry it; "
                "do what you can without it, or say what you need and why.",
                "shield:error",
            )
        logger.debug("shield: %s (%s): %s by %s", request.id, request.tool, decision.outcome, decision.rule)
        return decision

    def explain(self, request: Permission) -> Explanation:
        """The decision and its trace: for each command part or target, the rules that matched."""
        steps = tuple(self._step(item) for item in items_of(request, self._workspace))
        request_class = classify(request)
        return Explanation(decision_for(request, steps, request_class), request_class, steps)

    def _step(self, item: Item) -> Step:
        if item.problem:
            return Step(item, (), "deny", "shield:unchecked")
        matched = [(layer, rule) for layer, rule in self.rules if matches(rule, item, self._workspace)]
        names = tuple(f"{layer}:{rule.name}" for layer, rule in matched)
        for outcome, layers in _PRECEDENCE:
            for layer, rule in matched:
                if rule.decision == outcome and (layers is None or layer in layers):
                    return Step(item, names, outcome, f"{layer}:{rule.name}", rule.reason)
        outcome = self.defaults[item.cls]
        if outcome == "allow" and not inside(item, self._workspace):
            return Step(item, names, "ask", "default:outside")
        return Step(item, names, outcome, f"default:{item.cls}")

    def always_rule(self, request: Permission, name: str) -> Rule:
        """The narrowest allow rule covering this request: what a person's "always" adds to its context.

        Same tool and the exact command parts; or the same tool, class and exact paths; or the same host.
        """
        items = items_of(request, self._workspace)
        commands = tuple(dict.fromkeys(escape(item.command) for item in items if item.command is not None))
        if any(item.problem for item in items) or (not commands and any(item.unplaced for item in items)):
            raise ShieldError(f"shield: no rule can be made from request {request.id}: the shield cannot check it")
        tools = (escape(request.tool),)
        if commands:  # the person saw where it runs: an approved command outside stays allowed there
            where = None if all(inside(item, self._workspace) for item in items) else "any"
            classes = tuple(dict.fromkeys(item.cls for item in items)) if any(i.written for i in items) else None
            return Rule(name=name, decision="allow", tools=tools, commands=commands, workspace=where, class_=classes)
        return Rule(
            name=name,
            decision="allow",
            tools=tools,
            class_=tuple(dict.fromkeys(item.cls for item in items)),
            paths=tuple(escape(path) for item in items for path in item.paths) or None,
            hosts=tuple(item.host for item in items if item.host) or None,
        )


def explain(shield: Shield, request: Permission) -> Explanation:
    """The decision plus its trace, as `a2a-wrap shield explain` prints it (see format_explanation)."""
    return shield.explain(request)
