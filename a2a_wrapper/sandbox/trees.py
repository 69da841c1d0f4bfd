"""Folders the wrapper makes for a backend, replaced whole: nothing a link points at is touched."""

import shutil
from pathlib import Path

from a2a_wrapper.errors import BackendUnavailable


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


def refuse_links(path: Path, below: Path) -> None:
    """Every folder from `below` (excluded) down to `path` (included) is a folder, not a link. Where a backend can
    write a folder's parent (a sidecar's, whose folders are one user's volume), a link planted there would take
    the wrapper's writes and removals elsewhere, into what the wrapper's own container holds: refused, and the
    backend does not start."""
    for part in [path, *path.parents]:
        if part == below or below not in part.parents:
            return
        if part.is_symlink():
            raise BackendUnavailable(
                f"{part} is a link, where the wrapper makes the backend's folders: refused (something of the "
                "backend's planted it; remove it to start the backend again)"
            )
