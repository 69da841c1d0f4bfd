"""`a2a-wrap fleet PATH...`: a folder of agent folders, agent config files, or one fleet file, loaded and checked."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2a_wrapper.config.files import load_config
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.fleet.fleet_file import RegistrySettings, RestartPolicy, is_fleet_file, read_fleet_file
from a2a_wrapper.fleet.spec import AgentSpec, Fleet, RemoteSpec

CONFIG_NAMES = ("config.yaml", "config.yml", "config.json")


@dataclass(frozen=True)
class ConfigSource:
    """Where one supervised agent comes from: its config file and the fleet file's port for it, if any."""

    config: Path
    port: int | None = None


@dataclass
class Discovery:
    """The agents the paths name, before any agent config is read."""

    configs: list[ConfigSource] = field(default_factory=list)
    remotes: list[RemoteSpec] = field(default_factory=list)
    registry: RegistrySettings = field(default_factory=RegistrySettings)
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    fleet_file: Path | None = None


def load_fleet(paths: Sequence[Path], registry: dict[str, Any] | None = None) -> Fleet:
    """Every config loaded and the whole checked; the first problem is raised naming its file and key."""
    found = discover(paths)
    agents = tuple(load_agent(source) for source in found.configs)
    settings = found.registry.model_copy(update=registry or {})
    check_fleet(agents, found.remotes, settings)
    sources = tuple(Path(path).resolve() for path in paths)
    return Fleet(agents, tuple(found.remotes), settings, found.restart, sources)


def discover(paths: Sequence[Path], strict: bool = True) -> Discovery:
    """`strict` (at start): an empty folder or a missing file is an error; on reload, an agent that is gone."""
    found = Discovery()
    for path in (Path(p).resolve() for p in paths):
        if path.is_dir():
            folder = agent_configs(path)
            if not folder and strict:
                raise ConfigError(f"{path}: no agent folders in it (each one holds {', '.join(CONFIG_NAMES)})")
            found.configs.extend(ConfigSource(config) for config in folder)
        elif not path.exists():
            if strict:
                raise ConfigError(f"{path}: no such file or folder")
        elif is_fleet_file(path):
            _add_fleet_file(found, path)
        else:
            found.configs.append(ConfigSource(path))
    return found


def agent_configs(folder: Path) -> list[Path]:
    """`folder/<agent>/config.yaml` (or .yml, .json) for each agent folder, in name order."""
    configs = []
    for child in sorted(folder.iterdir()):
        config = next((child / name for name in CONFIG_NAMES if (child / name).is_file()), None)
        if child.is_dir() and config is not None:
            configs.append(config)
    return configs


def _add_fleet_file(found: Discovery, path: Path) -> None:
    if found.fleet_file is not None:
        raise ConfigError(f"{path}: only one fleet file at a time (already given {found.fleet_file})")
    fleet_file = read_fleet_file(path)
    found.fleet_file, found.registry, found.restart = path, fleet_file.registry, fleet_file.restart
    for entry in fleet_file.agents:
        if entry.url is not None:
            found.remotes.append(RemoteSpec(entry.url.rstrip("/"), entry.name, entry.console_key_env))
        else:
            assert entry.config is not None
            found.configs.append(ConfigSource((path.parent / entry.config).resolve(), entry.port))


def load_agent(source: ConfigSource) -> AgentSpec:
    overrides = {"server": {"port": source.port}} if source.port is not None else {}
    return AgentSpec(source.config, load_config(source.config, overrides))


def check_fleet(agents: Iterable[AgentSpec], remotes: Iterable[RemoteSpec], registry: RegistrySettings) -> None:
    """Two agents with one name, or two listeners on one port, are refused with a sentence naming both."""
    names: dict[str, str] = {}
    ports: dict[int, str] = {registry.port: "the registry"}
    for remote in remotes:
        if remote.name is not None:
            _claim(names, remote.name, f"the agent at {remote.url}", "the name")
    for agent in agents:
        who = f"agent {agent.name!r} ({agent.config})"
        if agent.port == 0:
            raise ConfigError(f"{agent.config}: server.port: 0 (a random port) cannot be listed; give it a port")
        _claim(names, agent.name, who, "the name")
        _claim(ports, agent.port, who, "port")


def _claim(taken: dict[Any, str], key: Any, who: str, what: str) -> None:
    if key in taken:
        raise ConfigError(f"{taken[key]} and {who} both have {what} {key!r}; each must be unique in a fleet")
    taken[key] = who
