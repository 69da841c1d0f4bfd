"""What a fleet is made of, once loaded: the agents it runs, the agents it only lists, its registry."""

import sys
from dataclasses import dataclass, field
from pathlib import Path

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.fleet.fleet_file import RegistrySettings, RestartPolicy
from a2a_wrapper.frontend.card import CARD_PATH

CONSOLE_KEY_ENV = "A2A_WRAP_CONSOLE_KEY"  # the key an agent's operator endpoint takes, unless its config names another


@dataclass(frozen=True)
class AgentSpec:
    """One agent the fleet runs: `a2a-wrap serve --config CONFIG --port PORT`."""

    config: Path
    settings: AgentSettings  # as the child will load it, the port applied

    @property
    def name(self) -> str:
        return self.settings.card.name

    @property
    def port(self) -> int:
        return self.settings.server.port

    @property
    def url(self) -> str:
        return self.settings.advertised_url

    @property
    def card_url(self) -> str:
        return self.url + CARD_PATH

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "a2a_wrapper", "serve", "--config", str(self.config), "--port", str(self.port)]


@dataclass(frozen=True)
class RemoteSpec:
    """An agent run elsewhere (another container, another host): listed, never supervised."""

    url: str
    name: str | None = None
    console_key_env: str | None = None  # where the registry finds the key of its operator endpoint

    @property
    def card_url(self) -> str:
        return self.url + CARD_PATH


@dataclass(frozen=True)
class Fleet:
    agents: tuple[AgentSpec, ...]
    remotes: tuple[RemoteSpec, ...] = ()
    registry: RegistrySettings = field(default_factory=RegistrySettings)
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    sources: tuple[Path, ...] = ()  # the paths it was loaded from; watched for changes when not empty
