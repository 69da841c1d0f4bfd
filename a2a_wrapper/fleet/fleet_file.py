"""The fleet file: which agents to run, where the registry listens, who operates its console, how crashes are
handled."""

from pathlib import Path

from pydantic import Field, ValidationError, model_validator

from a2a_wrapper.config.files import describe_errors
from a2a_wrapper.config.settings import ENV_NAME, PERSON_NAME, NamedKey, check_distinct, key_from_env
from a2a_wrapper.config.source import read_config_file
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.sections import Section

DEFAULT_REGISTRY_PORT = 8800


class Operator(NamedKey):
    """A person who signs in to the registry's console and answers approvals."""

    WHO = "operator"
    name: str = Field(pattern=PERSON_NAME, description="Who the operator is, in the audit.")
    key_env: str = Field(pattern=ENV_NAME, description="The environment variable holding the operator's key.")


class RegistrySettings(Section):
    host: str = Field("127.0.0.1", description="Address the registry binds.")
    port: int = Field(DEFAULT_REGISTRY_PORT, ge=1, le=65535)
    health_interval: float = Field(10.0, gt=0, description="Seconds between health calls to each agent.")
    operators: list[Operator] = Field(
        [], description="Who may sign in to the console at /console; none: the fleet prints a one-time sign-in link."
    )

    @model_validator(mode="after")
    def _distinct(self) -> "RegistrySettings":
        check_distinct(self.operators, "operators")
        return self


class RestartPolicy(Section):
    """supervisord's idea: a crash restarts after a growing delay; too many crashes in a window give up."""

    backoff: float = Field(1.0, gt=0, description="Delay before the first restart, doubled after each crash.")
    max_backoff: float = Field(30.0, gt=0)
    max_crashes: int = Field(5, ge=1, description="More crashes than this within `window` seconds: fatal.")
    window: float = Field(300.0, gt=0)
    stop_grace: float = Field(
        30.0, gt=0, description="Seconds an agent may take to drain its turns after SIGTERM before SIGKILL."
    )


class AgentEntry(Section):
    """An agent the fleet runs (`config`, relative to the fleet file) or only lists (`url`)."""

    config: Path | None = None
    port: int | None = Field(None, ge=1, le=65535, description="Overrides the config's server.port.")
    url: str | None = Field(None, pattern=r"^https?://[^/\s]+", description="An agent run elsewhere, only listed.")
    name: str | None = Field(None, min_length=1, description="For a `url` agent: its name before its card is read.")
    console_key_env: str | None = Field(
        None,
        pattern=ENV_NAME,
        description="For a `url` agent: the variable (in the registry's environment) holding its console key.",
    )

    @model_validator(mode="after")
    def _config_or_url(self) -> "AgentEntry":
        if (self.config is None) == (self.url is None):
            raise ValueError("an agent entry has exactly one of `config` (run it) or `url` (list it)")
        if self.url is not None and self.port is not None:
            raise ValueError("`port` applies to a `config` agent; a `url` agent's port is in its URL")
        if self.console_key_env is not None:
            if self.url is None:
                raise ValueError("`console_key_env` applies to a `url` agent; the fleet keys the agents it runs")
            key_from_env(self.console_key_env, f"the console key of the agent at {self.url}")
        return self


class FleetFile(Section):
    registry: RegistrySettings = RegistrySettings()
    restart: RestartPolicy = RestartPolicy()
    agents: list[AgentEntry] = Field(min_length=1)


def is_fleet_file(path: Path) -> bool:
    """A YAML/JSON file with an `agents` list and no `card` is a fleet file; anything else is an agent config."""
    data = read_config_file(path)
    return "agents" in data and "card" not in data


def read_fleet_file(path: Path) -> FleetFile:
    try:
        return FleetFile.model_validate(read_config_file(path))
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, path)) from exc
