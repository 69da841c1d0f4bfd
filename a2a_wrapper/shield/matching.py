"""Whether a rule matches an item: every matcher the rule has must match.

An allow rule is read strictly: the command's exact characters, every path it names matching a pattern
(and none unplaced). Deny and ask rules are read loosely: case and compatibility forms folded (`RM`,
fullwidth rm, `/bin/rm` are `rm`; `.ENV` is `.env`), and one matching path is enough. So normalising can only
ever make a request stricter.
"""

from a2a_wrapper.shield.globs import command_matches, path_matches
from a2a_wrapper.shield.hosts import host_matches
from a2a_wrapper.shield.items import Item
from a2a_wrapper.shield.paths import Workspace
from a2a_wrapper.shield.rules import Rule


def matches(rule: Rule, item: Item, workspace: Workspace) -> bool:
    strict = rule.decision == "allow"
    return (
        (rule.class_ is None or item.cls in rule.class_)
        and (rule.tools is None or any(command_matches(tool, item.tool, folded=not strict) for tool in rule.tools))
        and (rule.workspace is None or (rule.workspace == "inside") == inside(item, workspace))
        and (rule.paths is None or _paths_match(rule.paths, item, workspace.root, strict))
        and (rule.commands is None or _commands_match(rule.commands, item, strict))
        and (rule.hosts is None or (item.host is not None and any(host_matches(h, item.host) for h in rule.hosts)))
    )


def inside(item: Item, workspace: Workspace) -> bool:
    """Every path the item names is in the workspace (an item naming none is inside)."""
    return not item.unplaced and all(workspace.holds(path) for path in item.paths)


def _paths_match(patterns: tuple[str, ...], item: Item, root: str, strict: bool) -> bool:
    if not item.paths:
        return False
    hits = [any(path_matches(pattern, path, root, folded=not strict) for pattern in patterns) for path in item.paths]
    return (all(hits) and not item.unplaced) if strict else any(hits)


def _commands_match(patterns: tuple[str, ...], item: Item, strict: bool) -> bool:
    if strict:
        return item.command is not None and any(command_matches(p, item.command) for p in patterns)
    text = item.folded_command
    return text is not None and any(command_matches(p, text, folded=True) for p in patterns)
