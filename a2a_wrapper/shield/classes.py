"""What a request is: its kind's class, the common names of tools, and the commands that destroy.

Classes: read, write, delete, execute, network, mcp, other. Every ToolKind has its class; `other` is denied
unless a rule says otherwise, and so is a kind outside ToolKind (an adapter's bug). A command that destroys
is `delete` whatever tool runs it; `mv` counts (it removes its source and may replace its target), `cp` does
not (overwriting with `cp` asks as execute).
"""

import unicodedata
from collections.abc import Iterable, Sequence
from typing import Literal

from a2a_wrapper.events import ToolKind

Class = Literal["read", "write", "delete", "execute", "network", "mcp", "other"]
Outcome = Literal["allow", "ask", "deny"]
CLASSES: tuple[Class, ...] = ("read", "write", "delete", "execute", "network", "mcp", "other")
_STRICTNESS: dict[Outcome, int] = {"allow": 0, "ask": 1, "deny": 2}

# `delegate` (subagents), `switch_mode` (a mode may bypass permissions) and `other` are denied by default.
KIND_CLASSES: dict[ToolKind, Class] = {
    "read": "read",
    "search": "read",
    "think": "read",  # the agent's own todo list: nothing on disk or the network
    "question": "read",  # asking the person a question
    "external_directory": "read",  # a folder outside the workspace; the tool's own request follows
    "edit": "write",
    "write": "write",
    "move": "delete",  # like `mv`: the source path goes away
    "delete": "delete",
    "execute": "execute",
    "fetch": "network",
    "mcp": "mcp",
    "delegate": "other",
    "switch_mode": "other",
    "other": "other",
}

# The one name a kind's tool goes by on every backend (OpenCode's), which a `tools:` pattern matches besides the
# backend's own name: ACP names no tools and Copilot asks a shell command as `shell`, yet `tools: [bash]` means
# shell commands on each. Kinds of many tools (search, mcp, other) have none: only their own names match.
COMMON_TOOL_NAMES: dict[ToolKind, str] = {
    "execute": "bash",
    "edit": "edit",
    "write": "edit",  # OpenCode asks its write tool as edit
    "read": "read",
    "fetch": "webfetch",
}


def kind_class(kind: ToolKind) -> Class:
    return KIND_CLASSES.get(kind, "other")


def tool_names(kind: ToolKind, tool: str) -> tuple[str, ...]:
    """The names a `tools:` pattern is matched against: the backend's own, then the kind's common one."""
    common = COMMON_TOOL_NAMES.get(kind)
    return (tool,) if common is None or common == tool else (tool, common)


def strictest(outcomes: Iterable[Outcome]) -> Outcome:
    """Deny beats ask beats allow; nothing at all is a deny."""
    return max(outcomes, key=_STRICTNESS.__getitem__, default="deny")


def looser(outcome: Outcome, than: Outcome) -> bool:
    return _STRICTNESS[outcome] < _STRICTNESS[than]


def loose(text: str) -> str:
    """The form deny and ask rules compare: compatibility-normalised (a fullwidth rm is rm) and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def command_name(word: str) -> str:
    """`/usr/bin/RM` and a fullwidth rm are both `rm`: the loose base name of a command word."""
    return loose(word).rsplit("/", 1)[-1]


_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred", "srm", "wipe", "wipefs", "truncate", "mv", "sponge"})
_GIT_GLOBAL_VALUES = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env"})


def destructive(words: Sequence[str]) -> bool:
    """Whether this command (its words, the command first) deletes, truncates or discards files or history."""
    if not words:
        return False
    name, args = command_name(words[0]), [loose(word) for word in words[1:]]
    if name in _DELETERS or name.startswith("mkfs"):
        return True
    if name == "dd":
        return any(arg.startswith("of=") for arg in args)
    if name == "find":
        return "-delete" in args
    if name == "tee":  # truncates its files unless appending
        return not any(_has_flag(arg, "a", "--append") for arg in args) and any(not a.startswith("-") for a in args)
    if name == "ln":
        return any(_has_flag(arg, "f", "--force") for arg in args)
    if name == "rsync":
        return any(arg.startswith("--delete") or arg == "--remove-source-files" for arg in args)
    return name == "git" and _git_destroys(args)


def _has_flag(arg: str, short: str, long: str) -> bool:
    return arg == long or (arg.startswith("-") and not arg.startswith("--") and short in arg[1:])


def _git_destroys(args: list[str]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_GLOBAL_VALUES else 1
    if i >= len(args):
        return False
    sub, rest = args[i], args[i + 1 :]
    flags = set(rest)
    checks = {
        "clean": True,
        "rm": True,
        "restore": True,
        "filter-branch": True,
        "reset": bool(flags & {"--hard", "--merge"}),
        "checkout": bool(flags & {"--", "-f", "--force", "."}),
        "switch": bool(flags & {"-f", "--force", "--discard-changes"}),
        "stash": bool(rest) and rest[0] in ("drop", "clear"),
        "branch": bool(flags & {"-d", "-D", "--delete"}) or any(_has_flag(a, "D", "--delete") for a in rest),
        "tag": bool(flags & {"-d", "--delete"}),
        "worktree": bool(rest) and rest[0] == "remove",
        "reflog": bool(rest) and rest[0] in ("expire", "delete"),
        "update-ref": "-d" in flags,
        "push": _force_push(rest),
    }
    return checks.get(sub, False)


def _force_push(args: list[str]) -> bool:
    forced = {"-f", "--force", "-d", "--delete", "--mirror", "--prune"}
    return any(a in forced or a.startswith("--force") or a.startswith((":", "+")) for a in args)
