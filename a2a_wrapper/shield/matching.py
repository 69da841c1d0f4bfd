"""Whether a rule matches an item: every matcher the rule has must match.

An allow rule is read strictly: the command's exact characters, every path it names matching a pattern
(and none unplaced); it never matches an item whose words are known only at run time (`unallowed`), and one
with neither `workspace` nor `paths` matches only items inside the workspace (`workspace: outside` or `any`
says otherwise); its `commands` cover the files a command writes only when it names a `class`. Deny and ask
rules are read loosely: case and compatibility forms folded (`RM`, fullwidth rm, `/bin/rm` are `rm`; `.ENV`
is `.env`), one matching path is enough, and `class: write` covers deletes (truncating is writing too). So
normalising can only ever make a request stricter. A path pattern starting with `~` or `~user` is under
that home (see paths.homes).
"""

from a2a_wrapper.shield.globs import command_matches, escape, path_matches
from a2a_wrapper.shield.hosts import host_matches
from a2a_wrapper.shield.items import Item
from a2a_wrapper.shield.paths import Workspace, homes
from a2a_wrapper.shield.rules import Rule


def matches(rule: Rule, item: Item, workspace: Workspace) -> bool:
    strict = rule.decision == "allow"
    if strict and item.unallowed:
        return False
    return (
        (rule.class_ is None or _class_matches(rule.class_, item, strict))
        and (rule.tools is None or _tools_match(rule.tools, item, strict))
        and _workspace_matches(rule, item, workspace, strict)
        and (rule.paths is None or _paths_match(rule.paths, item, workspace.root, strict))
        and (rule.commands is None or _commands_match(rule, item, strict))
        and (rule.hosts is None or (item.host is not None and any(host_matches(h, item.host) for h in rule.hosts)))
    )


def inside(item: Item, workspace: Workspace) -> bool:
    """Every path the item names is in the workspace (an item naming none is inside)."""
    return not item.unplaced and all(workspace.holds(path) for path in item.paths)


def _tools_match(patterns: tuple[str, ...], item: Item, strict: bool) -> bool:
    return any(command_matches(pattern, name, folded=not strict) for pattern in patterns for name in item.tools)


def _class_matches(classes: tuple[str, ...], item: Item, strict: bool) -> bool:
    return item.cls in classes or (not strict and item.cls == "delete" and "write" in classes)


def _workspace_matches(rule: Rule, item: Item, workspace: Workspace, strict: bool) -> bool:
    # An allow rule that does not name paths or a workspace stance allows only inside the workspace:
    # `commands: ["git diff *"]` must not allow `git diff --output=/tmp/x`.
    stance = rule.workspace or ("inside" if strict and rule.paths is None else "any")
    return stance == "any" or (stance == "inside") == inside(item, workspace)


def _paths_match(patterns: tuple[str, ...], item: Item, root: str, strict: bool) -> bool:
    if not item.paths:
        return False
    expanded = [each for pattern in patterns for each in _home_expanded(pattern)]
    hits = [any(path_matches(pattern, path, root, folded=not strict) for pattern in expanded) for path in item.paths]
    return (all(hits) and not item.unplaced) if strict else any(hits)


def _home_expanded(pattern: str) -> list[str]:
    if not pattern.startswith("~"):
        return [pattern]
    user, _, rest = pattern[1:].partition("/")
    return [f"{escape(home).rstrip('/')}/{rest}" for home in homes(user)]


def _commands_match(rule: Rule, item: Item, strict: bool) -> bool:
    patterns = rule.commands or ()
    if strict:
        # `commands: ["pytest *"]` allows running pytest, not the files it writes: that takes `class: write`
        consented = not item.written or rule.class_ is not None
        return consented and item.command is not None and any(command_matches(p, item.command) for p in patterns)
    text = item.folded_command
    return text is not None and any(command_matches(p, text, folded=True) for p in patterns)
