"""Backends from the npm registry at pinned versions, installed into a folder the project manages.

An install reports as it goes (through `report`; the CLI writes it to stderr, so that stdout keeps one line
per backend): what it installs and where, npm's own lines, the size on disk every few seconds (npm shows no
progress when its output is not a terminal), and the size and seconds when done. A backend already installed
at its pinned version is not downloaded again.
"""

import asyncio
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from a2a_wrapper.errors import InstallError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pinned:
    package: str
    version: str
    binary_globs: tuple[str, ...]  # where the real binary lands inside node_modules
    megabytes: int  # about, installed on Linux x64: to tell how far an install is
    stub_bytes: int = 64 * 1024  # a binary this small or smaller is a stub (opencode-ai's, before postinstall)


PINNED = {
    "opencode": Pinned(
        "opencode-ai", "1.18.33", ("opencode-linux-*/bin/opencode", "opencode-darwin-*/bin/opencode"), 370
    ),
    # OpenCode 2: `bin/opencode.exe` is the Bun binary its postinstall hard-links from the platform's package.
    "opencode2": Pinned("@opencode/cli", "2.1.2", ("@opencode/cli/bin/opencode.exe",), 815),
    "copilot": Pinned(
        "@github/copilot", "1.0.102", ("@github/copilot-linux-*/copilot", "@github/copilot-darwin-*/copilot"), 200
    ),
    # The ACP adapter (Node) and, in its SDK's platform package, the native Claude Code it runs.
    "claude": Pinned(
        "@agentclientprotocol/claude-agent-acp",
        "0.101.0",
        ("@anthropic-ai/claude-agent-sdk-linux-*/claude", "@anthropic-ai/claude-agent-sdk-darwin-*/claude"),
        404,
    ),
    # Gemini CLI is Node: its entry is a small script that loads the bundle's chunks beside it.
    "gemini": Pinned("@google/gemini-cli", "0.61.0", ("@google/gemini-cli/bundle/gemini.js",), 100, stub_bytes=0),
}
PROGRESS_INTERVAL = 5.0  # seconds between two size reports while npm runs

Report = Callable[[str], None]


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
            if os.access(candidate, os.X_OK) and candidate.stat().st_size > pinned.stub_bytes:
                return candidate
    raise InstallError(
        f"the {kind} backend ({pinned.package}@{pinned.version}) is not installed in {modules.parent}; "
        f"run `a2a-wrap backends install {kind}` or set backend.binary in the config"
    )


def installed_version(kind: str) -> str | None:
    """The version of the pinned package in the managed folder, if it is there."""
    manifest = backends_dir() / kind / "node_modules" / PINNED[kind].package / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def _megabytes(folder: Path) -> float:
    """Each file once: opencode-ai's postinstall hard-links the binary into a second package."""
    sizes: dict[tuple[int, int], int] = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                stat = os.lstat(os.path.join(root, name))
            except OSError:
                continue  # npm moves files while it unpacks
            sizes[stat.st_dev, stat.st_ino] = stat.st_size
    return sum(sizes.values()) / 1e6


async def install(kind: str, report: Report = log.info) -> Path:
    """`npm install` the pinned package into the managed folder, unless it is there already; returns the binary."""
    pinned = PINNED[kind]
    spec = f"{pinned.package}@{pinned.version}"
    target = backends_dir() / kind
    if installed_version(kind) == pinned.version:
        try:
            binary = find_binary(kind)
        except InstallError:
            pass  # the package without its binary: install again
        else:
            report(f"{kind}: {spec} already installed in {target}")
            return binary
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not on PATH; install Node.js 20 or newer")
    target.mkdir(parents=True, exist_ok=True)
    report(f"{kind}: installing {spec} (about {pinned.megabytes} MB) from the npm registry into {target}")
    started = time.monotonic()
    await _npm_install(npm, pinned, target, lambda line: report(f"{kind}: {line}"))
    binary = find_binary(kind)
    size = await asyncio.to_thread(_megabytes, target)
    report(f"{kind}: installed {spec} ({size:.0f} MB) in {time.monotonic() - started:.0f} s: {binary}")
    return binary


async def _npm_install(npm: str, pinned: Pinned, target: Path, report: Report) -> None:
    spec = f"{pinned.package}@{pinned.version}"
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
    progress = asyncio.create_task(_report_size(target, pinned.megabytes, report), name="install-progress")
    output: list[str] = []
    try:
        assert process.stdout is not None
        async for raw in process.stdout:
            line = raw.decode(errors="replace").rstrip()
            if line:
                output.append(line)
                report(f"npm: {line}")
        code = await process.wait()
    finally:
        progress.cancel()
        if process.returncode is None:
            process.kill()
            await process.wait()
    if code != 0:
        raise InstallError(f"npm install {spec} failed ({code}): " + "\n".join(output[-20:]))


async def _report_size(target: Path, expected: int, report: Report) -> None:
    """npm downloads into its cache first, then unpacks: the size here grows in the second half."""
    started = time.monotonic()
    while True:
        await asyncio.sleep(PROGRESS_INTERVAL)
        size = await asyncio.to_thread(_megabytes, target)
        report(f"{size:.0f} of about {expected} MB unpacked after {time.monotonic() - started:.0f} s")
