"""What a sandboxed backend may touch, and the bubblewrap command line that enforces it.

bubblewrap (the same mechanism as Anthropic's sandbox-runtime and Flatpak) builds a new mount, PID, network,
IPC and user namespace; nothing of the host is visible unless bound in. What is bound:
- read-only: the system folders (`/usr`, `/etc`, `/lib*`, `/bin`, `/sbin`, `/opt`), with the system's own
  secrets (`/etc/shadow`, SSH host keys, …) masked, and the programs the backend runs (its binary, the
  Python of the bridge, the MCP servers' commands);
- read-write: the workspace, the backend's own folders under the agent's state folder, a private `/tmp`;
- read-only over them: the backend's config folder and files, which the wrapper makes anew at each start
  (`overlays`), and the folder of the sockets the wrapper serves (the egress proxy, the tool hook): nothing
  inside can replace, rename or write what the wrapper trusts;
- masked in the workspace: what the shield denies reading (an empty file or folder on top), read-only in it:
  what the shield denies writing, both expanded when the backend starts;
- never: the user's home, the wrapper's state (state.db, audit), other agents' folders, `/run`, `/var`.
The network namespace has only `lo`; the bridge (bridge.py) joins it to the egress proxy's socket, and serves
the wrapper a port inside on a listening socket the wrapper made and handed over as a file descriptor (no path
inside names it). Nested user
namespaces are disabled, capabilities dropped, no new privileges (bubblewrap always sets it), and the whole
tree dies with the wrapper (`--die-with-parent`, and the PID namespace ends with its first process).
"""

import json
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from a2a_wrapper.sandbox import bridge

log = logging.getLogger(__name__)

SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
SYSTEM_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/security/opasswd",
    "/etc/ssl/private",
    "/etc/ssh",  # host keys; the client's settings are not worth the risk
    "/etc/docker",
    "/etc/kubernetes",
)
PROXY_PORT = 3128
# Where the sockets the wrapper serves appear inside, read-only: a short fixed path (107 bytes at most).
SOCKETS_INSIDE = Path("/run/a2a-wrapper")
EGRESS_SOCKET = "egress.sock"
HOOK_SOCKET = "hook.sock"  # OpenCode's tool hook
WRAPPER_CHANNELS = (EGRESS_SOCKET, HOOK_SOCKET)  # what a backend in a pod of its own may open in the wrapper's


@dataclass(frozen=True)
class Forward:
    """127.0.0.1:`port` inside reaches `target` (`host:port`) through the egress proxy."""

    port: int
    target: str


@dataclass
class SandboxPlan:
    workdir: Path
    writable: list[Path]  # besides the workspace: the backend's own folder
    readable: list[Path] = field(default_factory=list)  # programs and files the backend runs
    masked: list[Path] = field(default_factory=list)  # hidden: an empty file or folder on top
    read_only: list[Path] = field(default_factory=list)  # inside the writable folders
    overlays: list[tuple[Path, Path]] = field(default_factory=list)  # (source, where inside): read-only, on top
    sockets: Path | None = None  # on the host: the folder of the sockets the wrapper serves, shown read-only
    forwards: list[Forward] = field(default_factory=list)
    serve: list[tuple[int, int]] = field(default_factory=list)  # a listening socket's descriptor -> a port inside

    def environment(self) -> dict[str, str]:
        """What the backend's environment gains: every HTTP client inside goes through the egress proxy."""
        return proxy_environment(PROXY_PORT)

    def command(self, bwrap: Path, argv: list[str], *, new_session: bool = False) -> list[str]:
        """`argv` run by the bridge inside bubblewrap."""
        options = [
            str(bwrap),
            *self._namespaces(new_session),
            *self._system(),
            *self._own(),
            "--chdir",
            str(self.workdir),
        ]
        return [*options, "--", *self._bridge(argv)]

    def _namespaces(self, new_session: bool) -> list[str]:
        options = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
        if new_session:
            options.append("--new-session")  # no controlling terminal to inject keystrokes into
        if os.geteuid() == 0:
            options += ["--cap-drop", "ALL"]  # root in its own namespace still owns root's files: no overrides
        return options

    def _system(self) -> list[str]:
        options = []
        for folder in SYSTEM_FOLDERS:
            options += ["--ro-bind-try", folder, folder]
        options += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
        options += ["--ro-bind-try", "/sys/fs/cgroup", "/sys/fs/cgroup"]  # runtimes size their heaps by it
        for secret in SYSTEM_SECRETS:
            options += _mask(Path(secret))
        return options

    def _own(self) -> list[str]:
        options = []
        for path in dict.fromkeys([*self.readable, *_python_paths()]):
            options += ["--ro-bind-try", str(path), str(path)]
        if self.sockets is not None:
            options += ["--ro-bind", str(self.sockets), str(SOCKETS_INSIDE)]
        for path in dict.fromkeys([self.workdir, *self.writable]):
            options += ["--bind", str(path), str(path)]
        for path in self.read_only:
            options += _read_only(path)
        for source, target in self.overlays:
            options += ["--ro-bind", str(source), str(target)]
        for path in self.masked:
            options += _mask(path)
        return options

    def _bridge(self, argv: list[str]) -> list[str]:
        assert self.sockets is not None, "a sandbox needs its egress socket"
        spec = {
            "egress": str(SOCKETS_INSIDE / EGRESS_SOCKET),
            "proxy_port": PROXY_PORT,
            "forward": [[forward.port, forward.target] for forward in self.forwards],
            "serve": [[descriptor, port] for descriptor, port in self.serve],
        }
        # The real interpreter: a venv's `bin/python` is a link through folders the sandbox may not have.
        return [os.path.realpath(sys.executable), "-I", "-S", bridge.__file__, json.dumps(spec), "--", *argv]


def proxy_environment(port: int) -> dict[str, str]:
    """HTTP(S)_PROXY at the bridge's port on loopback, for every client that reads them; loopback dialled directly."""
    proxy = f"http://127.0.0.1:{port}"
    variables = {name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    loopback = "127.0.0.1,localhost,::1"
    return {**variables, "NO_PROXY": loopback, "no_proxy": loopback}


def _read_only(path: Path) -> list[str]:
    """A missing source would stop bubblewrap, and with it every start of the backend: skipped, said in the log."""
    if path.is_symlink() or not path.exists():
        log.warning("sandbox: %s is gone or is now a link since the workspace was searched; not bound", path)
        return []
    return ["--ro-bind", str(path), str(path)]


def _mask(path: Path) -> list[str]:
    if path.is_dir():
        return ["--tmpfs", str(path)]
    if path.exists():
        return ["--ro-bind", "/dev/null", str(path)]
    return []  # nothing to hide yet: a file created later is not masked (see the README's limits)


def _python_paths() -> list[Path]:
    """The interpreter the bridge runs on and its standard library."""
    interpreter = Path(os.path.realpath(sys.executable)).parent
    # The wrapper's own environment too: MCP servers are often its Python with packages of the same venv.
    prefixes = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()]
    return [*prefixes, interpreter, Path(bridge.__file__).resolve().parent]
