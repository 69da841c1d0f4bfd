"""The environment and folders of a backend process: a few of the host's variables, and folders of its own.

The child never gets the whole of the wrapper's environment (its secrets stay out): only PASSED_ENV, then HOME,
the XDG folders and TMPDIR under the backend's own folder in the agent's state folder, so nothing of the host
user's config, caches or credentials is read or written. The backend's `env` and its own switches come after.

The folders are two planes. What the backend writes (HOME, data, cache, state, TMPDIR) is its own: the wrapper
creates those folders and never reads, loads, runs or writes anything in them. Its config folder
(XDG_CONFIG_HOME: settings, plugins, the wrapper's hook) is the wrapper's: made anew at every start from what
the wrapper writes (`produce_folder`), read-only in a sandbox, so nothing a tool plants there outlives the run
or is loaded at the next start.
"""

import os
from collections.abc import Mapping
from pathlib import Path

from a2a_wrapper.sandbox.trees import refuse_links, remove_tree

# The union of what the three backends passed: locale and time zone for their output, certificates and proxies
# for their model calls (Copilot's list was the longest; OpenCode and ACP agents take the same without harm).
PASSED_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
)
CONFIG_VARIABLE = "XDG_CONFIG_HOME"
FOLDERS = {
    "HOME": "home",
    CONFIG_VARIABLE: "config",
    "XDG_DATA_HOME": "data",
    "XDG_CACHE_HOME": "cache",
    "XDG_STATE_HOME": "state",
    "TMPDIR": "tmp",
}
Files = Mapping[str, str | bytes | None]  # a relative path -> its content, or None for an empty folder


def config_folder(home: Path) -> Path:
    """The backend's config folder: the wrapper's, made anew at each start (`produce_folder`)."""
    return home / FOLDERS[CONFIG_VARIABLE]


def writable_folders(home: Path) -> list[Path]:
    """The backend's own folders, created: all but the config folder. A link found in place of one (planted
    while an older layout let the backend write `home` itself) is replaced by a folder: a bind follows links."""
    folders = [home / name for variable, name in FOLDERS.items() if variable != CONFIG_VARIABLE]
    for folder in folders:
        if folder.is_symlink():
            folder.unlink()
        folder.mkdir(parents=True, exist_ok=True)
    return folders


def isolated_env(home: Path, host_env: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed host variables and the backend's own folders under `home` (the writable ones created).
    `home` and the two folders above it (a caller's folder, the callers' folder) are the wrapper's: none a link."""
    refuse_links(home, home.parent.parent.parent)
    writable_folders(home)
    passed = {name: value for name, value in host_env.items() if name in PASSED_ENV}
    return passed | {name: str(home / folder) for name, folder in FOLDERS.items()}


def produce_folder(folder: Path, files: Files) -> None:
    """`folder` made anew holding exactly `files`: whatever was there is removed first (links themselves, never
    what they point at), and every file is created new, so no link planted there is ever written through."""
    remove_tree(folder)
    folder.mkdir(mode=0o755, parents=True)
    for relative, content in sorted(files.items()):
        path = folder / relative
        if Path(relative).is_absolute() or ".." in Path(relative).parts:
            raise ValueError(f"{relative!r} is not a path inside {folder}")
        _make_folders(folder, path if content is None else path.parent)
        if content is not None:
            data = content.encode() if isinstance(content, str) else content
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)


def shown_over(made: Path, places: Mapping[str, Path], home: Path) -> list[tuple[Path, Path]]:
    """(source, place) pairs: each `made / name` the wrapper made, to be shown read-only over `places[name]` in the
    backend's own folders under `home`, where the backend would load code or settings from. Whatever a run left
    at a place (a link, a folder where a file goes) is removed first, so the mount lands on the place itself; a
    link above a place, between it and `home`, is refused."""
    for place in places.values():
        refuse_links(place.parent, home)
        remove_tree(place)
    return [(made / name, place) for name, place in places.items()]


def _make_folders(root: Path, folder: Path) -> None:
    """`folder` and its parents under `root`, each made new here (a fresh tree has nothing to follow)."""
    for part in reversed([folder, *folder.parents]):
        if part != root and root in part.parents and not part.is_dir():
            part.mkdir(mode=0o755)
