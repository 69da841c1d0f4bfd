"""The shield's path denials as the sandbox enforces them: found in the workspace when the backend starts.

A rule that denies by path alone (`paths`, optionally `class` and `workspace`; no `tools`, `commands` or
`hosts`, which narrow it to some calls) says the file must not be touched whatever tool tries: denied for read
(or for every class), it is masked; denied for write or delete only, it is bound read-only. What matches is
what exists at start: a file created later is judged by the rules alone (the README says so), and for an agent
working in place by the check after each turn (control_files.py). A `.git` is a control file as a whole
(shield/protected.py): bound read-only, so it cannot be renamed from inside; when it is a `gitdir:` file (a
worktree, a submodule), the folder it names and that folder's `commondir` are bound read-only too, so git works
inside and changes nothing there. A link is never bound: binding it would show its target.
"""

import logging
import os
from pathlib import Path

from a2a_wrapper.sandbox.control_files import WALK_LIMIT, is_control, read_regular
from a2a_wrapper.shield.globs import path_matches
from a2a_wrapper.shield.rules import Rule, ShieldConfig

log = logging.getLogger(__name__)

_PATH_ONLY = frozenset({"paths", "class", "workspace"})
_WRITES = frozenset({"write", "delete"})


def denied_paths(shield: ShieldConfig | None, workdir: Path, controls: bool = True) -> tuple[list[Path], list[Path]]:
    """(masked, read-only): paths under `workdir` that path-only deny rules cover, the built-in protection of
    files that run code outside tool calls included (with a shield or without) unless `controls` is false: the
    per-task copies (workspaces/), whose control files only the agent's own copy uses, are writable whole."""
    rules = shield.rules if shield else ()  # the built-in rule's paths, by a set lookup first: is_control
    hide = [rule for rule in rules if _path_deny(rule) and _covers(rule, {"read"})]
    freeze = [rule for rule in rules if _path_deny(rule) and _covers(rule, _WRITES)]
    masked: list[Path] = []
    read_only: list[Path] = []
    root = str(workdir.resolve())
    seen = 0
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            if _matches(hide, path, root):
                masked.append(Path(path))
            elif (controls and is_control(path[len(root) + 1 :], name)) or _matches(freeze, path, root):
                if not os.path.islink(path):
                    read_only.append(Path(path))
            else:
                continue
            if name in dirs:
                dirs.remove(name)  # the whole folder is covered
        seen += len(dirs) + len(files)
        if seen > WALK_LIMIT:
            log.warning("sandbox: %s has over %d entries; denied paths beyond them are not masked", root, seen)
            break
    return masked, read_only + (linked_git_dirs(Path(root)) if controls else [])


def linked_git_dirs(workdir: Path) -> list[Path]:
    """Where the workspace's `.git` file (`gitdir: PATH`) sends git, and that folder's `commondir`: read, never
    followed as a link, and only when each is a git dir (a folder with a HEAD file)."""
    found: list[Path] = []
    pointer, folder = workdir / ".git", workdir
    for prefix in ("gitdir:", ""):  # `.git` says `gitdir: PATH`; the git dir's `commondir` says PATH alone
        content = read_regular(pointer, 4096)
        text = content.decode(errors="replace").split("\n", 1)[0] if content is not None else ""
        if not text or not text.startswith(prefix):
            break
        target = Path(os.path.realpath(folder / text.removeprefix(prefix).strip()))
        if not target.is_dir() or read_regular(target / "HEAD", 4096) is None:
            break  # not a git dir: a `.git` file planted to show some other folder inside is not followed
        found.append(target)
        pointer, folder = target / "commondir", target
    return found


def _path_deny(rule: Rule) -> bool:
    return (
        rule.decision == "deny"
        and rule.paths is not None
        and set(rule.matchers) <= _PATH_ONLY
        and (rule.workspace != "outside")
    )


def _covers(rule: Rule, classes: set[str] | frozenset[str]) -> bool:
    return rule.class_ is None or bool(classes & set(rule.class_))


def _matches(rules: list[Rule], path: str, root: str) -> bool:
    return any(path_matches(pattern, path, root, folded=True) for rule in rules for pattern in rule.paths or ())
