"""The environment of a backend process: a few of the host's variables, and folders of its own.

The child never gets the whole of the wrapper's environment (its secrets stay out): only PASSED_ENV, then HOME,
the XDG folders and TMPDIR under the backend's own folder in the agent's state folder, so nothing of the host
user's config, caches or credentials is read or written. The backend's `env` and its own switches come after.
"""

from collections.abc import Mapping
from pathlib import Path

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
FOLDERS = {
    "HOME": "home",
    "XDG_CONFIG_HOME": "config",
    "XDG_DATA_HOME": "data",
    "XDG_CACHE_HOME": "cache",
    "XDG_STATE_HOME": "state",
    "TMPDIR": "tmp",
}


def own_folders(home: Path) -> dict[str, Path]:
    """HOME, XDG_* and TMPDIR under `home`, created."""
    folders = {name: home / folder for name, folder in FOLDERS.items()}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    return folders


def isolated_env(home: Path, host_env: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed host variables and the backend's own folders under `home` (created)."""
    passed = {name: value for name, value in host_env.items() if name in PASSED_ENV}
    return passed | {name: str(folder) for name, folder in own_folders(home).items()}
