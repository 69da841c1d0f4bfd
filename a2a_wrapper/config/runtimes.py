"""The `runtime:` section: where the backend process lives (an OS sandbox by default, a plain child, a container)."""

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from a2a_wrapper.addresses import LOCAL_NETWORKS, host_port, parse_network
from a2a_wrapper.sections import Section
from a2a_wrapper.shield.hosts import check_host_pattern


class ProcessRuntime(Section):
    """The backend as a plain child process: no boundary but the shield's rules (a warning at every start)."""

    kind: Literal["process"] = "process"


class SandboxRuntime(Section):
    """The backend in an OS sandbox (bubblewrap): writes to its workspace and own folder, no home, no network
    but the egress proxy."""

    kind: Literal["sandbox"] = "sandbox"
    read: list[Path] = Field([], description="More folders or files the backend may read (never your home).")
    write: list[Path] = Field([], description="More folders the backend may write besides its workspace.")
    hosts: list[str] = Field(
        [],
        description="Hosts (`example.com`, `*.example.com`) the egress proxy lets through whatever the policy; "
        "without a shield (auto_approve) the only way to reach a host the config does not name. A host is a name: "
        "it never opens a loopback, private or link-local address; a network in CIDR form (`10.20.0.0/16`) opens "
        "exactly that network's addresses (never this machine's own).",
    )

    @field_validator("hosts")
    @classmethod
    def _hosts_or_networks(cls, value: list[str]) -> list[str]:
        return [egress_host(entry) for entry in value]


def egress_host(entry: str) -> str:
    """One runtime.hosts entry, normalised: a host pattern, or a network in CIDR form that reaches no port of
    this machine's (its loopback would lead to the wrapper's own ports: the A2A port, the console)."""
    try:
        network = parse_network(entry)
    except ValueError as exc:
        raise ValueError(f"{entry!r} is not a network in CIDR form (such as 10.20.0.0/16): {exc}") from exc
    if network is None:
        return check_host_pattern(entry)
    if any(network.overlaps(local) for local in LOCAL_NETWORKS if local.version == network.version):
        raise ValueError(
            f"{entry!r} would open this machine's loopback or unspecified address, which leads to the wrapper's "
            "own ports; name a loopback service as an endpoint instead (the provider's base_url, an MCP server's "
            "url, a URL in backend.env)"
        )
    return str(network)


class DockerRuntime(Section):
    """The backend in a container: the workspace bind-mounted, an init process, labels and limits."""

    kind: Literal["docker"] = "docker"
    image: str = Field(min_length=1, description="A local image; it is never pulled.")
    cpus: float | None = Field(None, gt=0)
    memory: str | None = Field(None, pattern=r"^[0-9]+[bkmgBKMG]?$", description="e.g. 512m, 2g")
    network: str = Field("bridge", description="Docker network mode or name.")


class SidecarRuntime(Section):
    """The backend in a container of its own beside the wrapper's: a compose service or a pod's second container,
    running `a2a-wrap sidecar`, which starts what the wrapper asks it to. The two containers share exactly two
    volumes: `sockets`, the wrapper's, read-only in the backend's container, and `folders`, the backend's own
    folders (and the copies of per-task workspaces), read-write in both; plus the workspace. The wrapper's state,
    environment and processes are in its own container, out of the backend's sight. One caller per agent: every
    backend the sidecar starts runs as the same user."""

    kind: Literal["sidecar"] = "sidecar"
    network: Literal["none", "shared", "apart"] = Field(
        "none",
        description="The backend's container's network. `none` (compose's `network_mode: none`): loopback only, "
        "every connection through the wrapper's egress proxy, as in the host sandbox. `shared`: the wrapper's "
        "container's (a pod's containers always share one), where a tool that ignores the proxy reaches what the "
        "pod's network lets it. `apart`: a pod of its own (deploy kubernetes --backend-pod), whose NetworkPolicy "
        "lets it reach only the wrapper's `gate`; the egress proxy, the hook, the sidecar and the ports the backend "
        "serves cross between the pods as TCP channels that want the token in `token_file`. The sidecar refuses a "
        "start whose network is not the one named here.",
    )
    gate: str = Field(
        "0.0.0.0:8790",
        description="With network apart: HOST:PORT where the wrapper serves its channels (the egress proxy, the "
        "tool hook) to the backend's pod.",
    )
    backend_gate: str | None = Field(
        None, description="With network apart: HOST:PORT of the backend pod's gate (`a2a-wrap channel --listen`)."
    )
    token_file: Path | None = Field(
        None, description="With network apart: the channels' token, a Secret's file (one word, 32 characters or more)."
    )
    shown: Path | None = Field(
        None,
        description="With network apart: where the wrapper puts what it made for the backend to read (its config, "
        "unpacked programs), a folder of the shared volume mounted read-only in the backend's pod. Else the sockets "
        "folder holds them.",
    )
    sockets: Path = Field(
        Path("/run/a2a-wrapper"),
        description="The wrapper's sockets (the sidecar's link, the egress proxy, the tool hook): a volume the "
        "backend's container mounts read-only at the same path.",
    )
    folders: Path = Field(
        Path("/srv/a2a/backend"),
        description="The backend's own folders: a volume both containers mount read-write at the same path. Never "
        "the wrapper's state_dir.",
    )
    hosts: list[str] = Field([], description="As the sandbox's: hosts the egress proxy lets through.")
    connect_timeout: float = Field(
        120.0, gt=0, description="Seconds a backend start waits for the sidecar to connect to the wrapper."
    )

    @field_validator("hosts")
    @classmethod
    def _hosts_or_networks(cls, value: list[str]) -> list[str]:
        return [egress_host(entry) for entry in value]

    @field_validator("sockets", "folders", "shown")
    @classmethod
    def _absolute(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_absolute():
            raise ValueError(f"{value} is not an absolute path (both containers mount it at the same path)")
        return value

    @field_validator("gate", "backend_gate")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        if value is not None:
            host_port(value)
        return value

    @model_validator(mode="after")
    def _apart_has_its_channels(self) -> "SidecarRuntime":
        if self.network == "apart":
            missing = [key for key in ("backend_gate", "token_file", "shown") if getattr(self, key) is None]
            if missing:
                raise ValueError(f"runtime.network apart needs runtime.{', runtime.'.join(missing)}")
        return self


Runtime = Annotated[SandboxRuntime | ProcessRuntime | DockerRuntime | SidecarRuntime, Field(discriminator="kind")]
