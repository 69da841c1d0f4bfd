"""The `runtime:` section: where the backend process lives (an OS sandbox by default, a plain child, a container)."""

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator

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
        "without a shield (auto_approve) the only way to reach a host the config does not name.",
    )

    @field_validator("hosts")
    @classmethod
    def _host_patterns(cls, value: list[str]) -> list[str]:
        return [check_host_pattern(pattern) for pattern in value]


class DockerRuntime(Section):
    """The backend in a container: the workspace bind-mounted, an init process, labels and limits."""

    kind: Literal["docker"] = "docker"
    image: str = Field(min_length=1, description="A local image; it is never pulled.")
    cpus: float | None = Field(None, gt=0)
    memory: str | None = Field(None, pattern=r"^[0-9]+[bkmgBKMG]?$", description="e.g. 512m, 2g")
    network: str = Field("bridge", description="Docker network mode or name.")


Runtime = Annotated[SandboxRuntime | ProcessRuntime | DockerRuntime, Field(discriminator="kind")]
