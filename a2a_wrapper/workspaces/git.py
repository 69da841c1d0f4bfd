"""git, run by the wrapper so that nothing of a repository's own making is executed.

Every call: no system or global config (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null, an empty HOME), no
GIT_* variable of the wrapper's environment, and on the command line (which beats any config file) hooks off
(core.hooksPath=/dev/null), no fsmonitor, no untracked cache; diffs asked with --no-ext-diff --no-textconv. The commands
that read an agent's files (`add`, `diff`) run on a repository the wrapper owns (`--git-dir`, outside the sandbox)
with the agent's copy only as its work tree: the copy's `.git` (its config, hooks, `commondir`) is never read.
A `.gitattributes` there may name a filter or diff driver, but a driver is defined only in config, which the
agent cannot write: git then leaves the file as it is.
"""

import asyncio
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from a2a_wrapper.errors import WrapperError

TIMEOUT = 120.0  # seconds one git command may take (a clone of a large project included)
SAFE = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.untrackedCache=false",
    "-c", "core.sshCommand=false",
    "-c", "protocol.file.allow=always",
    "-c", "advice.detachedHead=false",
    "-c", "init.defaultBranch=main",
    "-c", "user.name=a2a-wrapper",
    "-c", "user.email=a2a-wrapper@localhost",
    "-c", "commit.gpgSign=false",
    "-c", "safe.directory=*",
)  # fmt: skip


class WorkspaceError(WrapperError):
    """A workspace could not be made, read or published; the message says which and why."""


def git_environment(home: Path) -> dict[str, str]:
    """The wrapper's environment without git's own variables, and with no config but the command line's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home),
        GIT_TERMINAL_PROMPT="0",
        GIT_ATTR_NOSYSTEM="1",
        LC_ALL="C",
    )
    return env


async def git(args: Sequence[str], *, home: Path, cwd: Path, stdin: bytes | None = None) -> bytes:
    """`git ARGS` as above, run in `cwd` (a folder of the wrapper's); its output, or WorkspaceError."""
    command = next((arg for arg in args if not arg.startswith("-") and "/" not in arg), "")
    return await asyncio.to_thread(_run, ["git", *SAFE, *args], command, home, cwd, stdin)


def _run(argv: list[str], command: str, home: Path, cwd: Path, stdin: bytes | None) -> bytes:
    try:
        done = subprocess.run(
            argv, input=stdin, capture_output=True, cwd=cwd, env=git_environment(home), timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorkspaceError(f"git {command} could not run: {exc}") from exc
    if done.returncode != 0:
        error = done.stderr.decode(errors="replace").strip()[-500:]
        raise WorkspaceError(f"git {command} failed ({done.returncode}): {error}")
    return done.stdout
