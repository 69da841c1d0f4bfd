"""The operator's rules are a floor: an agent config that tries to loosen them does not load.

At run time the strictest matching rule wins anyway, so a looser agent rule could never take effect where
the operator's rule matches. This check makes that visible at load: an agent rule is refused when its
decision is looser than an operator rule's and it matches only requests the operator rule also matches
(e.g. the operator denies `class: execute`, the agent allows `class: execute, commands: ["pytest *"]`).
An agent default looser than the operator's default for the same class is refused too. Partial overlaps
load; there the strictest rule decides, request by request.
"""

from typing import Any

from a2a_wrapper.shield.classes import CLASSES, looser
from a2a_wrapper.shield.globs import command_matches, path_matches
from a2a_wrapper.shield.rules import Rule, ShieldConfig, ShieldError

_WILDCARDS = frozenset("*?[")
_ROOT = "/workspace"  # stands for the agent's workspace when comparing relative patterns


def check_floor(operator: ShieldConfig | None, agent: ShieldConfig) -> None:
    if operator is None:
        return
    problems = []
    for cls in CLASSES:
        floor, own = getattr(operator.defaults, cls), getattr(agent.defaults, cls)
        if floor and own and looser(own, floor):
            problems.append(
                f"agent default `{cls}: {own}` would loosen the operator default `{cls}: {floor}`; "
                "the operator file is a floor. Remove it or make it as strict."
            )
    for rule in agent.rules:
        for floor_rule in operator.rules:
            if looser(rule.decision, floor_rule.decision) and covered(rule, floor_rule):
                problems.append(
                    f"agent rule `{rule.name}` ({rule.decision}) would loosen operator rule `{floor_rule.name}` "
                    f"({floor_rule.decision}: {summary(floor_rule)}): every request it matches, the operator's "
                    "rule matches too, so it could never apply. Remove it or narrow it to what the operator allows."
                )
    if problems:
        raise ShieldError("shield: " + "\nshield: ".join(problems))


def summary(rule: Rule) -> str:
    return ", ".join(f"{key} {_shown(value)}" for key, value in rule.matchers.items())


def _shown(value: object) -> str:
    return ", ".join(value) if isinstance(value, tuple) else str(value)


def covered(rule: Rule, floor: Rule) -> bool:
    """Whether every request `rule` matches is also matched by `floor` (judged by the patterns' text)."""
    mine, theirs = rule.matchers, floor.matchers
    return all(key in mine and _within(key, mine[key], value) for key, value in theirs.items())


def _within(key: str, mine: Any, theirs: Any) -> bool:
    if key == "class":
        return set(mine) <= set(theirs)
    if key == "workspace":
        return bool(mine == theirs or theirs == "any")
    within = {"tools": _glob_within, "commands": _glob_within, "paths": _path_within, "hosts": _host_within}[key]
    return all(any(within(pattern, floor) for floor in theirs) for pattern in mine)


def _glob_within(pattern: str, floor: str) -> bool:
    if pattern == floor or floor == "*":
        return True
    if not _WILDCARDS & set(pattern):
        return command_matches(floor, pattern, folded=True)
    return floor.endswith("*") and not _WILDCARDS & set(floor[:-1]) and pattern.startswith(floor[:-1])


def _path_within(pattern: str, floor: str) -> bool:
    if pattern == floor or floor == "**":
        return True
    if _WILDCARDS & set(pattern):
        prefix = floor.removesuffix("/**")
        return prefix != floor and not _WILDCARDS & set(prefix) and pattern.startswith(prefix + "/")
    absolute = pattern if pattern.startswith("/") else f"{_ROOT}/{pattern}"
    return path_matches(floor, absolute, _ROOT, folded=True)


def _host_within(pattern: str, floor: str) -> bool:
    return pattern == floor or (floor.startswith("*.") and pattern.endswith(floor[1:]))
