"""A request taken apart into what the shield decides: each part of its command, and its own target.

A command part names paths: its arguments (`--file=X` gives X), its command if written as a path, and a
redirection's file; relative ones are resolved from every folder the command may have `cd`-ed to. The
arguments of a command are not known to be paths, so every one is treated as one: that only ever makes a
part stricter to allow. Redirections are parts of their own: `> f` truncates (delete), `>> f` appends
(write), `< f` reads; `/dev/null` and descriptor copies (`2>&1`) are left out.
"""

from dataclasses import dataclass, replace

from a2a_wrapper.events import Permission
from a2a_wrapper.shield.classes import Class, command_name, destructive, kind_class, loose
from a2a_wrapper.shield.commands import Part, split
from a2a_wrapper.shield.hosts import BadUrl, url_host
from a2a_wrapper.shield.paths import Workspace, argument_text
from a2a_wrapper.shield.shell import Unparseable, Word

_FILE_KINDS = frozenset({"read", "edit", "write", "delete", "move"})  # tools that act on a named file

_REDIRECT_CLASSES: dict[str, Class] = {
    "<": "read",
    "<&": "read",
    ">>": "write",
    "&>>": "write",
    "<>": "write",
    ">": "delete",
    ">|": "delete",
    "&>": "delete",
    ">&": "delete",
}
_CHANGES_FOLDER = frozenset({"cd", "pushd"})


@dataclass(frozen=True, slots=True)
class Item:
    """One thing the shield decides: a part of a command, or the path, URL or tool a request names."""

    label: str  # what a person reads
    cls: Class
    tool: str
    command: str | None = None  # the part's words, for `commands` rules
    folded_command: str | None = None  # the same, loosely: for deny and ask rules
    paths: tuple[str, ...] = ()  # real absolute paths
    unplaced: bool = False  # it names a path known only when it runs
    host: str | None = None
    problem: str | None = None  # why it cannot be checked at all: it is denied


def items_of(request: Permission, workspace: Workspace) -> list[Item]:
    """One item per command part (each also naming the request's own paths), or the request's target;
    a URL on a command request is an item of class network of its own."""
    cls = kind_class(request.kind)
    if request.command is None:
        if cls == "execute":
            return [Item(request.tool, cls, request.tool, problem="the request names no command to check")]
        return [_target(request, cls, workspace)]
    named = _target(replace(request, url=None), cls, workspace)
    items = [
        replace(
            item,
            paths=tuple(dict.fromkeys(item.paths + named.paths)),
            unplaced=item.unplaced or named.unplaced,
            problem=item.problem or named.problem,
        )
        for item in _command_items(request.command, request.tool, workspace)
    ]
    if request.url is not None:
        items.append(_target(replace(request, paths=()), "network", workspace))
    return items


def classify(request: Permission) -> Class:
    """The request's class: its kind's, or `delete` when its command destroys."""
    cls = kind_class(request.kind)
    if request.command is None:
        return cls
    try:
        parts = split(request.command)
    except Unparseable:
        return cls
    return "delete" if any(part_class(part) == "delete" for part in parts) else cls


def part_class(part: Part) -> Class:
    if part.redirect:
        return _REDIRECT_CLASSES.get(part.redirect, "delete")
    words = [word.text for word in part.command]
    if destructive(words) or (part.wrapper and any(destructive(words[i:]) for i in range(1, len(words)))):
        return "delete"  # a wrapper's options are not all known: any command inside it that destroys counts
    return "execute"


def _target(request: Permission, cls: Class, workspace: Workspace) -> Item:
    paths = [workspace.resolve(path, workspace.root) for path in request.paths]
    problem = "a path contains a NUL byte" if any("\0" in path for path in request.paths) else None
    host = None
    if request.url is not None:
        try:
            host = url_host(request.url)
        except BadUrl as exc:
            problem = f"the URL {exc}"
    label = request.url or ", ".join(request.paths) or request.tool
    placed = tuple(path for path in paths if path is not None)
    # A file tool that names no file (some ACP agents ask before they know it): its target is unknown, so no
    # rule can place it inside the workspace.
    unplaced = None in paths or (request.kind in _FILE_KINDS and not request.paths)
    return Item(label, cls, request.tool, paths=placed, unplaced=unplaced, host=host, problem=problem)


def _command_items(command: str, tool: str, workspace: Workspace) -> list[Item]:
    try:
        parts = split(command)
    except Unparseable as exc:
        return [Item(command, "execute", tool, problem=str(exc))]
    if not parts:
        return [Item(command, "execute", tool, problem="the command is empty")]
    items: list[Item] = []
    cwds: list[str | None] = [workspace.root]
    for part in parts:
        items.append(_part_item(part, tool, workspace, cwds))
        cwds = _folders_after(part, workspace, cwds)
    return items


def _part_item(part: Part, tool: str, workspace: Workspace, cwds: list[str | None]) -> Item:
    words = part.command
    if part.redirect:
        named: list[tuple[Word, str | None]] = [(word, word.text) for word in part.words]
    else:
        name_at = len(part.words) - len(words)  # the command name is a path only when written as one
        arguments = [word for i, word in enumerate(part.words) if i != name_at or "/" in word.text]
        named = [(word, argument_text(word)) for word in arguments]
    paths: list[str] = []
    unplaced = False
    for word, text in named:
        found = None if text is None else workspace.word_paths(word, text, cwds)
        unplaced = unplaced or (text is not None and found is None)
        paths += found or []
    folded = " ".join([command_name(words[0].text), *(w.text for w in words[1:])]) if words else part.text
    return Item(
        part.text,
        part_class(part),
        tool,
        command=part.text,
        folded_command=loose(folded),
        paths=tuple(dict.fromkeys(paths)),
        unplaced=unplaced,
    )


def _folders_after(part: Part, workspace: Workspace, cwds: list[str | None]) -> list[str | None]:
    """Every folder later relative paths may be relative to (None: unknown)."""
    words = part.command
    if part.redirect or not words or command_name(words[0].text) not in _CHANGES_FOLDER:
        return cwds
    targets: list[Word] = [word for word in words[1:] if not word.text.startswith("-")]
    found = workspace.word_paths(targets[0], targets[0].text, cwds) if targets else None
    return [*cwds, *(found if found is not None else [None])]
