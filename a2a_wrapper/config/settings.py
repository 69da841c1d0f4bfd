"""The agent's configuration: one pydantic-settings model merging defaults, file, environment and flags.

Precedence, low to high: defaults, the config file, `A2A_WRAP_*` environment variables
(nested with `__`, e.g. `A2A_WRAP_SERVER__PORT`), then CLI flags.
"""

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from a2a_wrapper.addresses import parse_network
from a2a_wrapper.config.backends import Backend, OpenCodeSettings
from a2a_wrapper.config.runtimes import Runtime, SandboxRuntime, SidecarRuntime
from a2a_wrapper.config.workspace import WorkspaceSettings
from a2a_wrapper.errors import SENTENCE
from a2a_wrapper.guard.settings import GuardSettings
from a2a_wrapper.sections import Section
from a2a_wrapper.shield.hosts import BadUrl, check_host_pattern
from a2a_wrapper.shield.rules import Approver, ShieldConfig

ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"  # an environment variable's name, where a config names one
PERSON_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$"  # a caller's or an operator's name, as the audit shows it
ENV_PREFIX = "A2A_WRAP_"  # nested keys joined by "__": A2A_WRAP_SERVER__PORT
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


class Skill(Section):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str = ""
    tags: list[str] = []
    examples: list[str] = []


def key_from_env(key_env: str, whose: str = "") -> str:
    """The key in `key_env`; unset or empty fails closed, naming the variable (and whose key it is)."""
    key = os.environ.get(key_env, "")
    if not key:
        raise ValueError(f"{whose + ': ' if whose else ''}environment variable {key_env} is unset or empty")
    return key


class CardProvider(Section):
    organization: str
    url: str = ""


class CardSigning(Section):
    """The card carries a JWS (A2A §8.4) made with a private key read from the environment at start."""

    key_env: str = Field(pattern=ENV_NAME, description="The environment variable holding the PEM private key.")
    key_id: str = Field(min_length=1, description="`kid` in the JWS header: how a verifier finds the public key.")
    algorithm: Literal["ES256", "ES384", "RS256", "PS256", "EdDSA"] = "ES256"
    jku: str | None = Field(None, description="URL of the JWK set holding the public key (the JWS `jku` header).")

    def key(self) -> str:
        return os.environ.get(self.key_env, "")

    @model_validator(mode="after")
    def _key_is_set(self) -> "CardSigning":
        key_from_env(self.key_env)  # fail closed: a card promised signed is never served unsigned
        return self


class CardSettings(Section):
    name: str = Field(min_length=1, description="The agent's name, shown in its card and logs.")
    description: str = "A coding agent served over A2A."
    version: str = "0.1.0"
    skills: list[Skill] = []
    default_input_modes: list[str] = ["text/plain", "application/json"]
    default_output_modes: list[str] = ["text/plain", "application/json"]
    provider: CardProvider | None = None
    documentation_url: str | None = None
    signing: CardSigning | None = Field(None, description="Sign the card (JWS); off unless a key is given.")


PEER_SHARES = 8  # by default one peer may hold an eighth of the connections: seven eighths stay for the others


class ServerSettings(Section):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    advertise_url: str | None = Field(None, description="Base URL written into the card; default http://HOST:PORT.")
    max_body_bytes: int = Field(10 * 1024 * 1024, gt=0, description="Larger requests are refused (413).")
    max_parts: int = Field(256, gt=0, description="Parts one message may hold; more are refused.")
    max_text_bytes: int = Field(
        4 * 1024 * 1024, gt=0, description="UTF-8 bytes of text one message may hold, over all its parts."
    )
    header_timeout: float = Field(10.0, gt=0, description="Seconds a connection has to send a request's headers.")
    body_timeout: float = Field(60.0, gt=0, description="Seconds a request has to send its whole body.")
    idle_timeout: float = Field(5.0, gt=0, description="Seconds an idle keep-alive connection is kept open.")
    max_connections: int = Field(512, gt=0, description="Open connections served at once, from all peers together.")
    max_connections_per_peer: int | None = Field(
        None,
        gt=0,
        description="Open connections one peer (an IPv4 address, an IPv6 /64) may hold, before it authenticates "
        "or after; more are refused. Default: an eighth of max_connections. Behind a reverse proxy every "
        "connection is the proxy's: raise it there.",
    )
    grpc_port: int | None = Field(
        None, ge=0, le=65535, description="Also serve A2A's gRPC binding on this port (0: a free one); none: off."
    )

    @field_validator("advertise_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/") if value else value

    @property
    def peer_share(self) -> int:
        """The connections one peer may hold: max_connections_per_peer, else an eighth of the whole."""
        return self.max_connections_per_peer or max(1, self.max_connections // PEER_SHARES)

    @model_validator(mode="after")
    def _a_peers_share_within_the_whole(self) -> "ServerSettings":
        if self.peer_share > self.max_connections:
            raise ValueError(
                f"max_connections_per_peer ({self.peer_share}) is more than max_connections "
                f"({self.max_connections}): one peer's share cannot be larger than the whole"
            )
        return self


class PushSettings(Section):
    """Push notifications (A2A §13): webhooks a caller registers per task, called at each status change."""

    enabled: bool = True
    allow_hosts: list[str] = Field(
        [],
        description="Hosts or networks (CIDR) webhooks may reach although private, loopback or link-local; "
        "by default such URLs are refused.",
    )
    timeout: float = Field(10.0, gt=0, description="Seconds one delivery may take.")
    attempts: int = Field(5, ge=1, le=20, description="Deliveries tried per event, with backoff between them.")

    @field_validator("allow_hosts")
    @classmethod
    def _hosts_or_networks(cls, entries: list[str]) -> list[str]:
        return [allowed_webhook_host(entry) for entry in entries]


def allowed_webhook_host(entry: str) -> str:
    """One push.allow_hosts entry, normalised: a network in CIDR form, or a host as the shield spells hosts."""
    try:
        network = parse_network(entry)
        return check_host_pattern(entry) if network is None else str(network)
    except (ValueError, BadUrl) as exc:
        raise ValueError(f"{entry!r} is neither a host nor a network in CIDR form (such as 10.0.0.0/8): {exc}") from exc


class SessionSettings(Section):
    ttl: float = Field(3600.0, ge=0, description="Idle seconds before a context's session ends; 0 = never.")
    max_count: int = Field(1000, gt=0)


def masked_url(url: str) -> str:
    """`url` with its password replaced by ***: how a database URL appears in every log line and error."""
    return re.sub(r"(//[^/:@]*:)[^/@]*@", r"\1***@", url)


class TenantSettings(Section):
    """Each caller's backend runs apart (backends/tenants/): how many at once, and how long one may sit idle."""

    max_running: int = Field(
        8,
        gt=0,
        description="Callers' backends running at once; past it an idle one is stopped to make room, else a new "
        "caller's message is rejected.",
    )
    idle_stop: float = Field(
        600.0,
        gt=0,
        description="Seconds a caller's backend runs with no turn and no waiting approval before it is stopped; "
        "the caller's next message starts it again, with its sessions.",
    )


class StateSettings(Section):
    url: str | None = Field(
        None,
        description="Where tasks, sessions, rules, audit and push configs live: unset, the SQLite file "
        "STATE_DIR/state.db; postgresql://… for a database the agent's replicas share.",
    )
    lease: float = Field(
        30.0, gt=0, description="Seconds a replica holds a context past its last renewal (a dead one frees it then)."
    )
    replica: str | None = Field(None, description="This replica's name in the leases; default HOSTNAME-PID.")
    outage_wait: float = Field(
        30.0,
        gt=0,
        description="Seconds a running turn waits for its PostgreSQL to come back before it fails with a sentence "
        "(a new message is refused at once while it is unreachable).",
    )

    @field_validator("url")
    @classmethod
    def _known_engine(cls, value: str | None) -> str | None:
        if value is None or value.startswith(("postgresql://", "postgresql+asyncpg://")):
            return value
        raise PydanticCustomError(  # the value shown masked: a URL may carry a password
            SENTENCE,
            "not a PostgreSQL URL (postgresql://…; leave it out for the SQLite file): {url}",
            {"url": masked_url(value)},
        )


class TimeoutSettings(Section):
    turn: float = Field(600.0, gt=0, description="Seconds one turn may run before it is aborted.")


class LoggingSettings(Section):
    level: LogLevel = "INFO"
    timestamps: bool = Field(True, description="Off when a supervisor stamps each line (the fleet sets it so).")
    format: Literal["text", "json"] = Field(
        "text", description="json: one JSON object per line (time, level, logger, message, exc_info), for clusters."
    )

    @field_validator("level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        aliases = {"WARN": "WARNING"}
        if isinstance(value, str):
            return aliases.get(value.upper(), value.upper())
        return value


class NamedKey(Section):
    """Someone known by a name, whose key is read from the environment variable `key_env` at start and never
    written in a config: an agent's caller, a console's operator (fleet_file.py). Unset or empty fails closed."""

    WHO: ClassVar[str]  # what the error calls them: "caller", "operator"
    name: str
    key_env: str

    def key(self) -> str:
        return os.environ.get(self.key_env, "")

    @model_validator(mode="after")
    def _key_is_set(self) -> "NamedKey":
        key_from_env(self.key_env, f"{self.WHO} {self.name!r}")  # fail closed: an empty key must never let anyone in
        return self


def check_distinct(people: Sequence[NamedKey], where: str) -> None:
    """Refuses two of `people` with one name or one key variable, naming the repeated values."""
    for attribute in ("name", "key_env"):
        values = [getattr(person, attribute) for person in people]
        repeated = sorted({value for value in values if values.count(value) > 1})
        if repeated:
            raise ValueError(f"{where}: {attribute} {', '.join(repeated)} appears more than once")


class Caller(NamedKey):
    """A client allowed to call the agent."""

    WHO = "caller"
    name: str = Field(pattern=PERSON_NAME, description="Who the caller is; owns its tasks.")
    key_env: str = Field(pattern=ENV_NAME, description="The environment variable holding the caller's key.")


class AuthSettings(Section):
    callers: list[Caller] = Field(
        [], description="Who may call the A2A methods; none: every caller is let in, as anonymous."
    )

    @model_validator(mode="after")
    def _distinct(self) -> "AuthSettings":
        check_distinct(self.callers, "callers")
        return self


class ConsoleSettings(Section):
    """The fleet's console answers this agent's approvals through its operator endpoint (/operator/v1), with the
    key read from `key_env` at start; unset or empty, the endpoint is closed."""

    key_env: str = Field(
        "A2A_WRAP_CONSOLE_KEY",
        pattern=ENV_NAME,
        description="The environment variable holding the key the registry's console presents.",
    )

    def key(self) -> str:
        return os.environ.get(self.key_env, "")


class AgentSettings(BaseSettings):
    """One agent: its card, server, backend and policies."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
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
    workspace: WorkspaceSettings = WorkspaceSettings()
    sessions: SessionSettings = SessionSettings()
    tenants: TenantSettings = TenantSettings()
    state: StateSettings = StateSettings()
    timeouts: TimeoutSettings = TimeoutSettings()
    logging: LoggingSettings = LoggingSettings()
    auth: AuthSettings = AuthSettings()
    push: PushSettings = PushSettings()
    guard: GuardSettings = GuardSettings()
    console: ConsoleSettings = ConsoleSettings()
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

    def console_unkeyed(self) -> str | None:
        """Why no one could answer this agent's asks: only the console may, and its key is not set. Checked when
        the agent starts, not when its config is read: a fleet reads it before handing the agent the key."""
        if self.approvers == ("console",) and not self.console.key():
            return (
                f"shield.approvers: only the console answers, but its key's environment variable "
                f"{self.console.key_env} (console.key_env) is unset or empty: set it, or run the agent in a fleet, "
                "which sets it"
            )
        return None

    @property
    def backend_root(self) -> Path:
        """Where the backends' own folders (and the per-task copies) go: the state folder, except in a sidecar,
        whose container mounts `runtime.folders` and never the state folder."""
        assert self.state_dir is not None
        return self.runtime.folders if isinstance(self.runtime, SidecarRuntime) else self.state_dir

    @property
    def approvers(self) -> tuple[Approver, ...]:
        """Who answers this agent's asks: as configured, else the caller and, with its key set, the console."""
        if self.shield is not None and self.shield.approvers is not None:
            return self.shield.approvers
        return ("caller", "console") if self.console.key() else ("caller",)

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

    @model_validator(mode="after")
    def _sidecar_fits_agent(self) -> "AgentSettings":
        runtime = self.runtime
        if runtime.kind != "sidecar":
            return self
        if getattr(self.backend, "base_url", None):
            raise ValueError(
                "runtime.kind: sidecar starts the backend in its container; backend.base_url attaches to one"
            )
        if len(self.auth.callers) > 1:
            raise ValueError(
                f"runtime.kind: sidecar runs every backend as its container's one user, so it serves one caller, and "
                f"auth.callers names {len(self.auth.callers)}: run an agent (a pod, a compose service) per caller"
            )
        state = self.state_dir.resolve() if self.state_dir is not None else None
        for name, path in (("sockets", runtime.sockets), ("folders", runtime.folders)):
            if state is not None and (path == state or state in path.parents or path in state.parents):
                raise ValueError(
                    f"runtime.{name}: {path} overlaps state_dir {self.state_dir}, which the backend's container must "
                    "never mount: give it a volume of its own"
                )
        return self

    @model_validator(mode="after")
    def _workspace_fits_backend(self) -> "AgentSettings":
        if self.workspace.mode != "per_task" or not getattr(self.backend, "base_url", None):
            return self
        if "mode" not in self.workspace.model_fields_set:  # the default: an attached backend works in place
            self.workspace = self.workspace.model_copy(update={"mode": "in_place"})
        else:
            raise ValueError(
                "workspace.mode: per_task needs a backend the wrapper starts; backend.base_url attaches to one the "
                "wrapper cannot give a copy of the project to (set workspace.mode: in_place)"
            )
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
