"""The Copilot CLI's program folder: unpacked by the wrapper, outside the sandbox, and only read inside.

The `copilot` binary is a small loader holding the CLI's code as a packed asset. At each start it runs the
code from a folder: `COPILOT_CLI_DIST_DIR` when that holds an `index.js`; else `PKG/<platform>/<version>`
when it holds the loader's `.extraction-complete` marker and its entry files, PKG being
`$COPILOT_PKG_CACHE_HOME/pkg` (or `$COPILOT_CACHE_HOME/pkg`, or `$XDG_CACHE_HOME/copilot/pkg`); else it unpacks
its asset there first (the pinned 1.0.102's sea-loader.js; no hash is checked, the marker is all it trusts).
Left to itself it runs code from its cache folder, which the backend writes: a tool that writes into it changes
the program the wrapper starts next.

So the wrapper unpacks it once per binary, with the loader's own extract-only mode (what the loader does in a
child of its own on a first start), into a folder of the wrapper's user, keyed by the binary, and points both
variables at it. The sandbox shows that folder read-only, so nothing a tool writes there runs at the next
start. The loader's own race handling (unpack beside, then rename) lets several agents unpack at once.
"""

import asyncio
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from a2a_wrapper.errors import BackendUnavailable

MARKER = ".extraction-complete"  # the loader's: written last, once every file of the package is in place
_EXTRACT_ONLY = "COPILOT_SEA_EXTRACT_ONLY"
_UNPACK_TIMEOUT = 300.0  # seconds: ~235 MB, 1 s on a quiet disk, over 10 s on a busy one


@dataclass(frozen=True)
class Program:
    folder: Path  # bound read-only into the sandbox: COPILOT_PKG_CACHE_HOME
    dist: Path  # the unpacked package the loader runs: COPILOT_CLI_DIST_DIR

    def env(self) -> dict[str, str]:
        """The CLI's variables naming its code. Auto-update off as well: with it on, the loader and the package's
        index.js each prefer a newer version found in any of its cache folders, the backend's writable ones
        among them (the SDK's `--no-auto-update` says the same; this holds whatever a backend.env says)."""
        folders = {"COPILOT_PKG_CACHE_HOME": str(self.folder), "COPILOT_CLI_DIST_DIR": str(self.dist)}
        return folders | {"COPILOT_AUTO_UPDATE": "false"}


def programs_root() -> Path:
    """Where the wrapper keeps the unpacked CLIs, one folder per binary: its user's cache folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "a2a-wrapper" / "copilot-programs"


def folder_for(binary: Path, root: Path | None = None) -> Path:
    """The binary's own folder: a new or changed binary (path, size, time) gets a new one, never an old package."""
    resolved = binary.resolve()
    info = resolved.stat()
    key = hashlib.sha256(f"{resolved}\0{info.st_size}\0{info.st_mtime_ns}".encode()).hexdigest()[:16]
    return (root or programs_root()) / key


async def unpacked(binary: Path, root: Path | None = None) -> Program:
    """The binary's package, unpacked by the loader itself (outside any sandbox) unless it is already, under
    `root` (default: `programs_root()`; a sidecar's is in the folder its backend's container reads, read-only)."""
    folder = folder_for(binary, root)
    found = _complete(folder)
    if found is None:
        await _unpack(binary, folder)
        found = _complete(folder)
    if found is None:
        raise BackendUnavailable(f"the Copilot CLI {binary} unpacked no complete package into {folder}")
    return Program(folder, found)


def _complete(folder: Path) -> Path | None:
    """The one unpacked package under `folder` (PKG/<platform>/<version>) that holds the loader's marker."""
    packages = sorted(marker.parent for marker in folder.glob(f"pkg/*/*/{MARKER}"))
    return packages[-1] if packages and (packages[-1] / "index.js").is_file() else None


async def _unpack(binary: Path, folder: Path) -> None:
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True, mode=0o755)
    # The loader's extract-only mode: it unpacks into $COPILOT_PKG_CACHE_HOME/pkg and exits, running no CLI code.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), _EXTRACT_ONLY: "1"}
    env["COPILOT_PKG_CACHE_HOME"] = str(folder)
    process = await asyncio.create_subprocess_exec(
        str(binary),
        "--binary-version",
        env=env,
        cwd=folder,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(_UNPACK_TIMEOUT):
            _, said = await process.communicate()
    except TimeoutError as exc:
        raise BackendUnavailable(
            f"the Copilot CLI {binary} did not unpack its package in {_UNPACK_TIMEOUT:.0f} s"
        ) from exc
    finally:
        if process.returncode is None:  # timed out, or the start was cancelled: no unpacking left behind
            process.kill()
            await process.wait()
    if process.returncode != 0:
        words = said.decode(errors="replace").strip()[-500:]
        raise BackendUnavailable(f"the Copilot CLI {binary} could not unpack its package into {folder}: {words}")
