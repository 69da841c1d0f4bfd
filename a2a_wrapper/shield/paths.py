"""Where a path points: made absolute against the workspace, `..` and symlinks resolved, inside or outside.

Resolving happens when the request is decided; a link created after that (time of check to time of use)
is not seen. A glob argument counts as every file it matches now (hidden ones too) and as itself. A path
the shell computes when it runs (`$HOME/x`, `~/x`, `{a,b}`), a glob with wildcards in its folders or
matching more than GLOB_LIMIT files, or a relative path after a `cd` to somewhere unknown cannot be placed:
it counts as outside the workspace and never matches an allow rule's paths.
"""

import glob
import os
from collections.abc import Sequence
from itertools import islice
from pathlib import Path

from a2a_wrapper.shield.shell import Word

GLOB_LIMIT = 1000
_WILDCARDS = frozenset("*?[")


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
                if len(matches) > GLOB_LIMIT:
                    return None
                names += matches
            for name in names:
                resolved = self.resolve(name, cwd)
                if resolved is None:
                    return None
                found.append(resolved)
        return found


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
