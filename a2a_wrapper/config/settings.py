"""The agent's configuration: one pydantic-settings model merging defaults, file, environment and flags.

Precedence, low to high: defaults, the config file, `A2A_WRAP_*` environment variables
(nested with `__`, e.g. `A2A_WRAP_SERVER__PORT`), then CLI flags.
"""

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from a2a_wrapper.guard.settings import GuardSettings
from a2a_wrapper.sections import Section
from a2a_wrapper.shield.hosts import check_host_pattern
from a2a_wrapper.shield.rules import ShieldConfig

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


class Skill(Section):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str = ""
    tags: list[str] = []
    examples: list[str] = []


class CardProvider(Section):
    organization: str
    url: str = ""


class CardSettings(Section):
    name: str = Field(min_length=1, description="The agent's name, shown in its card and logs.")
    description: str = "A coding agent served over A2A."
    version: str = "0.1.0"
    skills: list[Skill] = []
    default_input_modes: list[str] = ["text/plain", "application/json"]
    default_output_modes: list[str] = ["text/plain", "application/json"]
    provider: CardProvider | None = None
    documentation_url: str | None = None


class ServerSettings(Section):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    advertise_url: str | None = Field(None, description="Base URL written into the card; default http://HOST:PORT.")
    max_body_bytes: int = Field(10 * 1024 * 1024, gt=0, description="Larger requests are refused (413).")

    @field_validator("advertise_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/") if value else value


class ModelProvider(Section):
    """A custom OpenAI-compatible provider (the offline model, a local server, a proxy)."""

    id: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    name: str | None = None
    base_url: str = Field(pattern=r"^https?://")
    api_key: SecretStr = SecretStr("not-needed")
    models: list[str] = Field(min_length=1)


MODEL_PATTERN = r"^[A-Za-z0-9_.-]+/.+$"


class McpServer(Section):
    """One MCP server, written once and mapped to each backend's own format: a stdio command or an HTTP URL."""

    command: list[str] | None = Field(None, min_length=1, description="stdio server: the program and its arguments.")
    url: str | None = Field(None, pattern=r"^https?://", description="HTTP (streamable) server.")
    env: dict[str, str] = Field({}, description="Environment of a stdio server.")
    headers: dict[str, str] = Field({}, description="Headers sent to an HTTP server.")
    tools: list[str] = Field(["*"], description="Tools of this server the agent may see.")
    enabled: bool = True

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServer":
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server has exactly one of `command` (stdio) or `url` (HTTP)")
        if self.url is not None and self.env:
            raise ValueError("`env` applies to a stdio server (`command`); an HTTP server takes `headers`")
        if self.command is not None and self.headers:
            raise ValueError("`headers` apply to an HTTP server (`url`); a stdio server takes `env`")
        return self


class BackendSettings(Section):
    """What every backend kind shares: workspace, instructions, environment, MCP servers, start-up bound."""

    workdir: Path = Field(
        Path("workspace"), description="The agent's workspace, created if missing; relative to the config file."
    )
    system_prompt: str | None = None
    system_prompt_file: Path | None = None
    system_prompt_mode: Literal["append", "replace"] = "append"
    env: dict[str, str] = {}
    mcp_servers: dict[str, McpServer] = Field({}, description="MCP servers by name (stdio `command` or HTTP `url`).")
    startup_timeout: float = Field(60.0, gt=0)

    @property
    def enabled_mcp_servers(self) -> list[str]:
        """The names of the MCP servers the backend is given (its tools' names start with them)."""
        return [name for name, server in self.mcp_servers.items() if server.enabled]


class OpenCodeSettings(BackendSettings):
    kind: Literal["opencode"] = "opencode"
    binary: Path | None = Field(None, description="opencode binary; default: the managed install.")
    base_url: str | None = Field(
        None, pattern=r"^https?://", description="Attach to a running `opencode serve` instead of spawning."
    )
    username: str = "opencode"
    password: SecretStr | None = None
    model: str = Field("offline/offline-model", pattern=MODEL_PATTERN, description="provider/model")
    agent: str | None = None
    provider: ModelProvider | None = None
    opencode_config: dict[str, Any] = Field({}, description="Raw OpenCode config merged in last.")


class CopilotProvider(Section):
    """A provider of the user's own (BYOK) for Copilot: sent on every session."""

    type: Literal["openai", "azure", "anthropic"] = "openai"
    base_url: str = Field(pattern=r"^https?://")
    api_key: SecretStr | None = None
    bearer_token: SecretStr | None = None
    wire_api: Literal["completions", "responses"] | None = None
    azure_api_version: str | None = None


class CopilotSettings(BackendSettings):
    kind: Literal["copilot"] = "copilot"
    binary: Path | None = Field(None, description="Copilot CLI binary; default: the managed install.")
    model: str | None = Field(None, description="Model id; required with a provider.")
    provider: CopilotProvider | None = Field(None, description="Your own model provider instead of GitHub's.")
    github_token: SecretStr | None = Field(
        None, description="GitHub token; default COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN from the environment."
    )
    reasoning_effort: Literal["low", "medium", "high", "xhigh"] | None = None


class AcpSettings(BackendSettings):
    kind: Literal["acp"] = "acp"
    command: list[str] = Field(min_length=1, description="The ACP agent's program and arguments (stdio).")


Backend = Annotated[OpenCodeSettings | CopilotSettings | AcpSettings, Field(discriminator="kind")]
BACKEND_KINDS = ("opencode", "copilot", "acp")


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


class SessionSettings(Section):
    ttl: float = Field(3600.0, ge=0, description="Idle seconds before a context's session ends; 0 = never.")
    max_count: int = Field(1000, gt=0)


class TimeoutSettings(Section):
    turn: float = Field(600.0, gt=0, description="Seconds one turn may run before it is aborted.")


class LoggingSettings(Section):
    level: LogLevel = "INFO"

    @field_validator("level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        aliases = {"WARN": "WARNING"}
        if isinstance(value, str):
            return aliases.get(value.upper(), value.upper())
        return value


class Caller(Section):
    """A client allowed to call the agent; its key is read from `key_env` at start, never written in the config."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$", description="Who the caller is; owns its tasks.")
    key_env: str = Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="The environment variable holding the caller's key."
    )

    def key(self) -> str:
        return os.environ.get(self.key_env, "")

    @model_validator(mode="after")
    def _key_is_set(self) -> "Caller":
        if not self.key():  # fail closed: an empty key must never let anyone in
            raise ValueError(f"caller {self.name!r}: environment variable {self.key_env} is unset or empty")
        return self


class AuthSettings(Section):
    callers: list[Caller] = Field(
        [], description="Who may call the A2A methods; none: every caller is let in, as anonymous."
    )

    @model_validator(mode="after")
    def _distinct(self) -> "AuthSettings":
        for attribute in ("name", "key_env"):
            values = [getattr(caller, attribute) for caller in self.callers]
            repeated = sorted({value for value in values if values.count(value) > 1})
            if repeated:
                raise ValueError(f"callers: {attribute} {', '.join(repeated)} appears more than once")
        return self


class AgentSettings(BaseSettings):
    """One agent: its card, server, backend and policies."""

    model_config = SettingsConfigDict(
        env_prefix="A2A_WRAP_",
        env_nested_delimiter="__",
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
    )

    card: CardSettings
    server: ServerSettings = ServerSettings()
    backend: Backend = OpenCodeSettings()
    runtime: Runtime = SandboxRuntime()
    sessions: SessionSettings = SessionSettings()
    timeouts: TimeoutSettings = TimeoutSettings()
    logging: LoggingSettings = LoggingSettings()
    auth: AuthSettings = AuthSettings()
    guard: GuardSettings = GuardSettings()
    auto_approve: bool = Field(
        False, description="Without a shield section: allow (true) or deny (false) every tool call."
    )
    shield: ShieldConfig | None = Field(None, description="Rules deciding each tool call (see the shield docs).")
    operator_rules: Path | None = Field(
        None, description="A file of shield rules every agent gets as a floor its own rules cannot loosen."
    )
    state_dir: Path | None = Field(None, description="Tasks, sessions, backend home; default per agent.")

    @field_validator("backend", mode="before")
    @classmethod
    def _default_kind(cls, value: Any) -> Any:
        # `kind` may be left out (or a single key set from the environment): the default backend is meant.
        if isinstance(value, dict) and "kind" not in value:
            return {"kind": "opencode", **value}
        return value

    @model_validator(mode="after")
    def _one_policy(self) -> "AgentSettings":
        if self.auto_approve and (self.shield is not None or self.operator_rules is not None):
            raise ValueError("auto_approve: true cannot be combined with shield rules; write it as shield defaults")
        return self

    @model_validator(mode="after")
    def _runtime_fits_backend(self) -> "AgentSettings":
        if self.runtime.kind != "docker":
            return self
        if self.backend.kind != "opencode":
            raise ValueError(
                f"runtime.kind: docker runs the opencode backend only; backend.kind {self.backend.kind} runs as a "
                "process (set runtime.kind: process, or run the whole agent in a container: see compose/)"
            )
        if self.backend.base_url:
            raise ValueError("runtime.kind: docker starts OpenCode in a container; backend.base_url attaches to one")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings)

    @property
    def advertised_url(self) -> str:
        if self.server.advertise_url:
            return self.server.advertise_url
        host = "127.0.0.1" if self.server.host in ("0.0.0.0", "::", "") else self.server.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"  # an IPv6 literal
        return f"http://{host}:{self.server.port}"
