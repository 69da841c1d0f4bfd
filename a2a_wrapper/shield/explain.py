"""What the shield says: the sentence of a decision, the trace behind it, and the rules as a table."""

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from a2a_wrapper.events import Permission
from a2a_wrapper.shield.classes import Class, Outcome, strictest
from a2a_wrapper.shield.decision import Decision
from a2a_wrapper.shield.items import Item
from a2a_wrapper.shield.rules import Rule
from a2a_wrapper.text_table import text_table

_SHOWN = 200


@dataclass(frozen=True, slots=True)
class Step:
    """How one item (a command part, or the request's own target) was decided."""

    item: Item
    matched: tuple[str, ...]  # every rule that matched, as `layer:name`
    outcome: Outcome
    rule: str  # the one that decided, or `default:<class>`, `default:outside`, `shield:unchecked`
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Explanation:
    decision: Decision
    request_class: Class
    steps: tuple[Step, ...]


def decision_for(request: Permission, steps: Sequence[Step], request_class: Class) -> Decision:
    """Across the steps, deny beats ask beats allow; the first step with that outcome speaks, except that of the
    steps that deny or ask, one of the request's own class goes first (in `ls -la && rm -rf x` it is the `rm`
    that makes the request a delete and asks)."""
    outcome = strictest(step.outcome for step in steps)
    deciding = [step for step in steps if step.outcome == outcome]
    own = [step for step in deciding if step.item.cls == request_class and outcome != "allow"]
    step = next(iter(own + deciding), None)
    if step is None:
        sentence = f"The shield found nothing to check in {_what(request)}. Do not retry it."
        return Decision("deny", sentence, "shield:empty")
    return Decision(outcome, _sentence(request, step, compound=len(steps) > 1), step.rule)


def _sentence(request: Permission, step: Step, compound: bool) -> str:
    what = _what(request)
    item = step.item
    if item.problem:
        return (
            f"The shield cannot check {what}: {_shown(item.problem)}. Do not retry it; write plain commands "
            "(no heredocs, arithmetic or command names computed at run time), use the edit tool to write files, "
            "and plain http(s) URLs."
        )
    part = f" for its part `{_shown(item.label)}`" if compound and item.label != request.command else ""
    why = f"(rule `{step.rule}`: class {item.cls})"
    reason = f" {step.reason}" if step.reason else ""
    if item.unallowed:  # the allow rules that would have matched its text did not: say why
        reason += f" No rule may allow it: {_shown(item.unallowed)}."
    if step.outcome == "deny":
        return (
            f"The shield denied {what}{part} {why}.{reason} Do not retry it; "
            "do what you can without it, or say what you need and why."
        )
    if step.outcome == "ask":
        return f"{_capital(what)} needs a person's approval{part} {why}.{reason}"
    return f"{_capital(what)} is allowed {why}."


def _what(request: Permission) -> str:
    if request.command is not None:
        return f"`{_shown(request.command)}`" if request.command.strip() else "an empty command"
    if request.url is not None:
        return f"{request.tool} of {_shown(request.url)}"
    if request.paths:
        return f"{request.tool} on {_shown(', '.join(request.paths))}"
    return f"the {request.tool} tool"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:] if not text.startswith("`") else text


def _shown(text: str) -> str:
    """Printable, one line, at most _SHOWN characters."""
    clean = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in text)
    return clean if len(clean) <= _SHOWN else clean[: _SHOWN - 1] + "…"


def format_explanation(explanation: Explanation) -> str:
    decision = explanation.decision
    head = [
        f"decision: {decision.outcome} (rule {decision.rule})",
        f"request class: {explanation.request_class}",
        f"sentence: {decision.reason}",
        "",
    ]
    rows = [("part or target", "class", "rules that matched", "outcome", "decided by")]
    for step in explanation.steps:
        item = step.item
        rows.append((_shown(item.label), item.cls, ", ".join(step.matched) or "-", step.outcome, step.rule))
    unallowed = [step.item for step in explanation.steps if step.item.unallowed]
    notes = [f"no rule may allow `{_shown(item.label)}`: {item.unallowed}" for item in unallowed]
    return "\n".join([*head[:-1], *notes, ""]) + text_table(rows)


def format_table(
    rules: Sequence[Rule], *, layer: str = "agent", defaults: Mapping[Class, Outcome] | None = None
) -> str:
    """The rules (and, given, the defaults) as a table, for `a2a-wrap check`."""
    rows = [("rule", "decision", "matches", "reason")]
    for rule in rules:
        matchers = "; ".join(f"{key}: {_value(value)}" for key, value in rule.matchers.items())
        rows.append((f"{layer}:{rule.name}", rule.decision, matchers, rule.reason or ""))
    for cls, outcome in (defaults or {}).items():
        rows.append((f"default:{cls}", outcome, f"class: {cls}, no rule matched", ""))
    return text_table(rows)


def _value(value: object) -> str:
    return ", ".join(value) if isinstance(value, tuple) else str(value)
