"""Where a backend process lives: a child process on the host (`process`, or `sandbox`: the same child inside
bubblewrap, see a2a_wrapper/sandbox) or a container (`docker`).

Both children have the same small shape (`Child`), so a backend starts, watches and stops either one alike.

In a container (`runtime: {kind: docker, image, cpus, memory, network}`):
- the workspace and the backend's own folders are bind-mounted at the same absolute paths, so the shield's
  path rules mean the same inside; nothing else of the host is visible (the wrapper's SQLite state is not);
- the backend binary is the one the wrapper resolved (the managed install or backend.binary), bind-mounted
  read-only: wrapper and backend versions always match, and any image with glibc and bash serves, without a
  rebuild when the pinned version moves;
- `network: host` shares the host's loopback: a model or provider on 127.0.0.1 is reached as from a process.
  With `bridge` (or a named network) the backend binds 0.0.0.0 in its own namespace, its port is published on
  127.0.0.1 only, and `host.docker.internal` names the host; a provider must then listen where the bridge
  reaches it (not 127.0.0.1);
- the image must be local (never pulled), the engine is DOCKER_HOST, and containers a crashed wrapper left
  are found by their labels and removed at start.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from a2a_wrapper.config.runtimes import DockerRuntime, ProcessRuntime, SandboxRuntime, SidecarRuntime
from a2a_wrapper.process import ChildProcess
from a2a_wrapper.runtime.child import Child
from a2a_wrapper.runtime.container import ContainerProcess
from a2a_wrapper.runtime.options import ContainerSpec, Mount
from a2a_wrapper.sandbox import Sandbox

__all__ = ["Child", "ContainerProcess", "ContainerSpec", "Mount", "listen_host", "loopback_url", "make_child"]


def make_child(
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    runtime: SandboxRuntime | ProcessRuntime | DockerRuntime | SidecarRuntime,
    *,
    agent: str,
    mounts: Sequence[Mount] = (),
    ports: Sequence[int] = (),
    sandbox: Sandbox | None = None,
    serve: Sequence[tuple[str, int]] = (),
) -> Child:
    """A child process (sandboxed unless the runtime is `process`), or a container running `argv` with `mounts`
    at the same paths and `ports` published. In a sandbox, `mounts` are the backend's own folders (writable)
    and programs (read-only), a mount `at` another path is shown read-only there over the backend's own folders,
    and `serve` makes ports inside reachable as the sandbox's Unix sockets."""
    if isinstance(runtime, SandboxRuntime | SidecarRuntime):
        assert sandbox is not None, "a sandbox or sidecar runtime runs in the agent's boundary"
        own = [mount.path for mount in mounts if not mount.read_only]
        programs = [mount.path for mount in mounts if mount.read_only and mount.at is None]
        given = [(mount.path, mount.at) for mount in mounts if mount.at is not None]
        wrapped = sandbox.wrap(list(argv), dict(env), own=own, programs=programs, given=given, serve=serve)
        return ChildProcess(name, wrapped.argv, wrapped.env, cwd, handed_over=wrapped.pass_fds)
    if isinstance(runtime, ProcessRuntime):
        return ChildProcess(name, argv, env, cwd)
    spec = ContainerSpec(
        agent=agent, argv=list(argv), env=dict(env), workdir=cwd, mounts=list(mounts), ports=list(ports)
    )
    return ContainerProcess(name, spec, runtime)


def listen_host(runtime: SandboxRuntime | ProcessRuntime | DockerRuntime | SidecarRuntime) -> str:
    """The address a backend binds: loopback, unless it is alone in a container network reached by a published port."""
    if isinstance(runtime, DockerRuntime) and runtime.network != "host":
        return "0.0.0.0"
    return "127.0.0.1"


def loopback_url(url: str) -> str:
    """A URL a backend announced, as the wrapper reaches it: a wildcard bind is reached on loopback (same port)."""
    parts = urlsplit(url)
    if parts.hostname in ("0.0.0.0", "::"):
        return urlunsplit(parts._replace(netloc=f"127.0.0.1:{parts.port}"))
    return url
