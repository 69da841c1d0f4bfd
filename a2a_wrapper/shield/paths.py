"""Where a path points: made absolute against the workspace, `..` and symlinks resolved, inside or outside.

Resolving happens when the request is decided; a link created after that (time of check to time of use)
is not seen. A glob argument counts as every file it matches now (hidden ones too) and as itself. A path
the shell computes when it runs (`$HOME/x`, `~/x`, `{a,b}`), a glob with wildcards in its folders or
matching more than GLOB_LIMIT files, or a relative path after a `cd` to somewhere unknown cannot be placed:
it counts as outside the workspace and never matches an allow rule's paths. A glob matching a file whose
name starts with `-` cannot be placed either: the program reads that name as an option.

`~`, `~user` and `$HOME` are expanded for deny and ask rules (home_paths), so `cat ~root/.ssh/id_rsa` meets a
deny on `~/.ssh/**`; such a path stays unplaced for allow rules, since the backend may run with a HOME of its own.
"""

import glob
import os
import pwd
import re
from collections.abc import Sequence
from itertools import islice
from pathlib import Path

from a2a_wrapper.shield.shell import Word

GLOB_LIMIT = 1000
_WILDCARDS = frozenset("*?[")
_HOME_PREFIX = re.compile(r"(?:~([A-Za-z0-9._-]*)|\$HOME|\$\{HOME\})(?=/|$)")


class Workspace:
    def __init__(self, root: Path | str) -> None:
        self.root = os.path.realpath(root)

    def resolve(self, path: str, cwd: str | None = None) -> str | None:
        """The real absolute path, or None when it cannot be placed."""
        if not path or "\0" in path or path.startswith("~"):
            return None
        if cwd is None and not path.startswith("/"):
            return None
        return os.path.realpath(os.path.join(cwd or self.root, path))

    def holds(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root.rstrip("/") + "/")

    def word_paths(self, word: Word, text: str, cwds: Sequence[str | None]) -> list[str] | None:
        """The real paths `text` (from `word`) may name from any of `cwds`; None when it cannot be placed."""
        if word.dynamic:
            return None
        if word.glob and _WILDCARDS & set(text.rpartition("/")[0]):
            return None  # expanding wildcards in folders could walk the whole disk
        found: list[str] = []
        for cwd in cwds:
            names = [text]
            if word.glob and cwd is not None:
                matches = list(islice(glob.iglob(text, root_dir=cwd, include_hidden=True), GLOB_LIMIT + 1))
                if len(matches) > GLOB_LIMIT or any(match.startswith("-") for match in matches):
                    return None
                names += matches
            for name in names:
                resolved = self.resolve(name, cwd)
                if resolved is None:
                    return None
                found.append(resolved)
        return found


def homes(user: str = "") -> list[str]:
    """The home of `user` (by the password database), or the wrapper user's as $HOME and the database say."""
    try:
        found = [pwd.getpwnam(user).pw_dir] if user else [os.path.expanduser("~"), pwd.getpwuid(os.getuid()).pw_dir]
    except KeyError:
        return []
    return list(dict.fromkeys(os.path.realpath(home) for home in found if home.startswith("/")))


def home_paths(text: str) -> list[str]:
    """The real paths `~/x`, `~user/x`, `$HOME/x` or `${HOME}/x` may name; [] for any other text."""
    prefix = _HOME_PREFIX.match(text)
    if prefix is None:
        return []
    rest = text[prefix.end() :].lstrip("/")
    return [os.path.realpath(os.path.join(home, rest)) for home in homes(prefix.group(1) or "")]


def argument_text(word: Word) -> str | None:
    """The part of a command argument that may be a path: `--file=X` gives X, `-I../inc` gives `../inc`."""
    text = word.text
    if word.assignment:
        return text.split("=", 1)[1] or None
    if not text.startswith("-") or text == "-":
        return text
    if "=" in text:
        return text.split("=", 1)[1] or None
    starts = [i for i in (text.find("/"), text.find("."), text.find("~")) if i > 0]
    return text[min(starts) :] if starts else None
