"""Folders the wrapper makes for a backend, replaced whole: nothing a link points at is touched."""

import shutil
from pathlib import Path


def remove_tree(path: Path) -> None:
    """`path` gone, whatever it is: a link is unlinked (not followed), a folder removed with what is in it."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def copy_anew(source: Path, place: Path) -> None:
    """`source` (made by the wrapper) at `place`, whatever was there removed first (a link unlinked, not followed);
    every file and folder is created new."""
    remove_tree(place)
    place.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        place.mkdir(mode=0o755)
        for entry in source.iterdir():
            copy_anew(entry, place / entry.name)
    else:
        place.write_bytes(source.read_bytes())
