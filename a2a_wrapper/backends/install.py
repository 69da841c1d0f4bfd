"""Backends from the npm registry at pinned versions, installed into a folder the project manages."""

import asyncio
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from a2a_wrapper.errors import InstallError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pinned:
    package: str
    version: str
    binary_globs: tuple[str, ...]  # where the real binary lands inside node_modules


PINNED = {
    "opencode": Pinned("opencode-ai", "1.18.33", ("opencode-linux-*/bin/opencode", "opencode-darwin-*/bin/opencode")),
    "copilot": Pinned(
        "@github/copilot", "1.0.102", ("@github/copilot-linux-*/copilot", "@github/copilot-darwin-*/copilot")
    ),
}
_STUB_MAX_BYTES = 64 * 1024  # opencode-ai ships a small stub that only says "postinstall was not run"


def backends_dir() -> Path:
    """`A2A_WRAP_BACKENDS_DIR`, or the per-user data folder."""
    configured = os.environ.get("A2A_WRAP_BACKENDS_DIR")
    if configured:
        return Path(configured).resolve()
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data / "a2a-wrapper" / "backends"


def find_binary(kind: str) -> Path:
    """The installed binary of a backend kind, or an error saying how to install it."""
    pinned = PINNED[kind]
    modules = backends_dir() / kind / "node_modules"
    for pattern in pinned.binary_globs:
        for candidate in sorted(modules.glob(pattern)):
            if os.access(candidate, os.X_OK) and candidate.stat().st_size > _STUB_MAX_BYTES:
                return candidate
    raise InstallError(
        f"the {kind} backend ({pinned.package}@{pinned.version}) is not installed in {modules.parent}; "
        f"run `a2a-wrap backends install {kind}` or set backend.binary in the config"
    )


async def install(kind: str) -> Path:
    """`npm install` the pinned package into the managed folder; returns the binary."""
    pinned = PINNED[kind]
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not on PATH; install Node.js 20 or newer")
    target = backends_dir() / kind
    target.mkdir(parents=True, exist_ok=True)
    spec = f"{pinned.package}@{pinned.version}"
    log.info("installing %s into %s", spec, target)
    process = await asyncio.create_subprocess_exec(
        npm,
        "install",
        "--prefix",
        str(target),
        "--no-fund",
        "--no-audit",
        "--save-exact",
        spec,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    if process.returncode != 0:
        raise InstallError(f"npm install {spec} failed ({process.returncode}): {output.decode()[-2000:]}")
    return find_binary(kind)
