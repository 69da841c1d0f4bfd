"""A request taken apart into what the shield decides: each part of its command, and its own target.

A command part names paths: its arguments (`--file=X` gives X), its command if written as a path, and a
redirection's file; relative ones are resolved from the request's `workdir` (the workspace by default) and
every folder the command may have `cd`-ed to; the workdir itself is a path every part names. The arguments
of a command are not known to be paths, so every one is treated as one: that only ever makes a part stricter
to allow. Redirections are parts of their own: `> f` truncates (delete), `>> f` appends (write), `< f` reads;
`/dev/null` and descriptor copies (`2>&1`) are left out. Each file a command writes by an option or operand
(writes.py) is an item of its own, of class write or delete. A part with a word computed at run time, or an
option the shield cannot judge, carries why no allow rule may match it (`unallowed`).
"""

from dataclasses import dataclass, replace

from a2a_wrapper.events import Permission, ToolKind
from a2a_wrapper.shield.classes import Class, command_name, destructive, kind_class, loose, tool_names
from a2a_wrapper.shield.commands import Part, split
from a2a_wrapper.shield.hosts import BadUrl, url_host
from a2a_wrapper.shield.paths import Workspace, argument_text, home_paths
from a2a_wrapper.shield.shell import Unparseable, Word
from a2a_wrapper.shield.writes import unjudged, written

_FILE_KINDS: frozenset[ToolKind] = frozenset({"read", "edit", "write", "delete", "move"})  # act on a named file

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
    tools: tuple[str, ...]  # the names a `tools:` rule may match (classes.tool_names)
    command: str | None = None  # the part's words, for `commands` rules
    folded_command: str | None = None  # the same, loosely: for deny and ask rules
    paths: tuple[str, ...] = ()  # real absolute paths
    unplaced: bool = False  # it names a path known only when it runs
    host: str | None = None
    problem: str | None = None  # why it cannot be checked at all: it is denied
    unallowed: str | None = None  # why no allow rule may match it (a word known only at run time, …)
    written: bool = False  # a file its command writes by an option or operand (`command` is that command's)


def items_of(request: Permission, workspace: Workspace) -> list[Item]:
    """One item per command part (each also naming the request's own paths), or the request's target;
    a URL on a command request is an item of class network of its own."""
    cls, tools = kind_class(request.kind), tool_names(request.kind, request.tool)
    if request.command is None:
        if cls == "execute":
            return [Item(request.tool, cls, tools, problem="the request names no command to check")]
        return [_target(request, cls, workspace)]
    named = _target(replace(request, url=None, paths=(*request.paths, *_workdir(request))), cls, workspace)
    start = workspace.root if request.workdir is None else workspace.resolve(request.workdir, workspace.root)
    items = [
        replace(
            item,
            paths=tuple(dict.fromkeys(item.paths + named.paths)),
            unplaced=item.unplaced or named.unplaced,
            problem=item.problem or named.problem,
        )
        for item in _command_items(request.command, tools, workspace, start)
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


def _workdir(request: Permission) -> tuple[str, ...]:
    return () if request.workdir is None else (request.workdir,)


def _target(request: Permission, cls: Class, workspace: Workspace) -> Item:
    paths = [workspace.resolve(path, workspace.root) for path in request.paths]
    guessed = [home for path in request.paths for home in home_paths(path)]
    problem = "a path contains a NUL byte" if any("\0" in path for path in request.paths) else None
    host = None
    if request.url is not None:
        try:
            host = url_host(request.url)
        except BadUrl as exc:
            problem = f"the URL {exc}"
    label = request.url or ", ".join(request.paths) or request.tool
    placed = tuple(dict.fromkeys([*(path for path in paths if path is not None), *guessed]))
    # A file tool that names no file (some ACP agents ask before they know it): its target is unknown, so no
    # rule can place it inside the workspace.
    unplaced = None in paths or (request.kind in _FILE_KINDS and not request.paths)
    tools = tool_names(request.kind, request.tool)
    return Item(label, cls, tools, paths=placed, unplaced=unplaced, host=host, problem=problem)


def _command_items(command: str, tools: tuple[str, ...], workspace: Workspace, start: str | None) -> list[Item]:
    try:
        parts = split(command)
    except Unparseable as exc:
        return [Item(command, "execute", tools, problem=str(exc))]
    if not parts:
        return [Item(command, "execute", tools, problem="the command is empty")]
    items: list[Item] = []
    cwds: list[str | None] = [start]
    for part in parts:
        items += [_part_item(part, tools, workspace, cwds), *_written_items(part, tools, workspace, cwds)]
        cwds = _folders_after(part, workspace, cwds)
    return items


def _part_item(part: Part, tools: tuple[str, ...], workspace: Workspace, cwds: list[str | None]) -> Item:
    words = part.command
    if part.redirect:
        named: list[tuple[Word, str | None]] = [(word, word.text) for word in part.words]
    else:
        name_at = len(part.words) - len(words)  # the command name is a path only when written as one
        arguments = [word for i, word in enumerate(part.words) if i != name_at or "/" in word.text]
        named = [(word, argument_text(word)) for word in arguments]
    paths, unplaced = _placed([(word, text) for word, text in named if text is not None], workspace, cwds)
    folded = " ".join([command_name(words[0].text), *(w.text for w in words[1:])]) if words else part.text
    return Item(
        part.text,
        part_class(part),
        tools,
        command=part.text,
        folded_command=loose(folded),
        paths=paths,
        unplaced=unplaced,
        unallowed=_unallowed(part),
    )


def _written_items(part: Part, tools: tuple[str, ...], workspace: Workspace, cwds: list[str | None]) -> list[Item]:
    """One item per file the command writes by an option or operand (`--output=F`, `tee F`), judged by paths."""
    items = []
    for word, text, cls in [] if part.redirect else written(part.command):
        paths, unplaced = _placed([(word, text)], workspace, cwds)
        label = f"{text} (written by {part.command[0].text})"
        command = _part_item(part, tools, workspace, cwds)
        items.append(replace(command, label=label, cls=cls, paths=paths, unplaced=unplaced, written=True))
    return items


def _placed(
    named: list[tuple[Word, str]], workspace: Workspace, cwds: list[str | None]
) -> tuple[tuple[str, ...], bool]:
    """The real paths the words name, and whether some cannot be placed (those count by their home guesses)."""
    paths: list[str] = []
    unplaced = False
    for word, text in named:
        found = workspace.word_paths(word, text, cwds)
        unplaced = unplaced or found is None
        paths += home_paths(text) if found is None else found
    return tuple(dict.fromkeys(paths)), unplaced


def _unallowed(part: Part) -> str | None:
    """Why no allow rule may match this part: what it runs is known only when the shell runs it."""
    dynamic = next((word.text for word in part.words if word.dynamic), None)
    if dynamic is not None:
        return f"its word `{dynamic}` is known only when the shell runs"
    if part.computed:
        return "a word of its redirections (a here-string too) is known only when the shell runs"
    option_glob = next((word.text for word in part.command[1:] if word.glob and word.text.startswith("-")), None)
    if option_glob is not None:
        return f"its glob `{option_glob}` expands to options known only when the shell runs"
    return None if part.redirect else unjudged(part.command)


def _folders_after(part: Part, workspace: Workspace, cwds: list[str | None]) -> list[str | None]:
    """Every folder later relative paths may be relative to (None: unknown)."""
    words = part.command
    if part.redirect or not words or command_name(words[0].text) not in _CHANGES_FOLDER:
        return cwds
    targets: list[Word] = [word for word in words[1:] if not word.text.startswith("-")]
    found = workspace.word_paths(targets[0], targets[0].text, cwds) if targets else None
    return [*cwds, *(found if found is not None else [None])]
