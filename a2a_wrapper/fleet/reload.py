"""Hot reload: for each change to the fleet's files, load them again and apply what changed to the agents it touches.

A changed config restarts only its agent; a new one starts; a removed one stops. A config that no longer
loads leaves its agent running as it was, and the error (naming the key) is logged; so does an agent whose
state folder another process holds (it is not started).
"""

import asyncio
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from watchfiles import Change, awatch

from a2a_wrapper.errors import ConfigError
from a2a_wrapper.fleet.fleet_file import RegistrySettings
from a2a_wrapper.fleet.loader import CONFIG_NAMES, check_fleet, discover, load_agent
from a2a_wrapper.fleet.ownership import StateLocks
from a2a_wrapper.fleet.spec import AgentSpec, Fleet
from a2a_wrapper.fleet.supervisor import Supervisor
from a2a_wrapper.state.lock import FolderBusy

log = logging.getLogger(__name__)

DEBOUNCE_MS = 400


async def watch_fleet(fleet: Fleet, supervisor: Supervisor, locks: StateLocks, stop: asyncio.Event) -> None:
    """Until `stop` is set; a reload under way when it is set finishes first."""
    while not stop.is_set():
        roots = watched_folders(fleet.sources, supervisor.specs.values())
        log.info("watching %s for config changes", ", ".join(map(str, roots)))
        relevant = lambda _change, path: _relevant(Path(path), fleet, supervisor)  # noqa: E731
        async for changes in awatch(*roots, watch_filter=relevant, debounce=DEBOUNCE_MS, stop_event=stop):
            _log_changes(changes)
            await apply(fleet.sources, supervisor, locks, fleet.registry)
            if watched_folders(fleet.sources, supervisor.specs.values()) != roots:
                break  # a config in a new folder: watch that one too


def watched_folders(sources: Sequence[Path], specs: Iterable[AgentSpec]) -> list[Path]:
    """Source folders themselves, and the folder of every file that matters (editors replace files, not edit them)."""
    folders = {source if source.is_dir() else source.parent for source in sources}
    for spec in specs:
        folders.update(path.parent for path in _files_of(spec))
    return sorted(folders)


def _files_of(spec: AgentSpec) -> list[Path]:
    backend = spec.settings.backend
    files = [spec.config, backend.system_prompt_file, spec.settings.operator_rules]
    return [path for path in files if path is not None]


def _relevant(path: Path, fleet: Fleet, supervisor: Supervisor) -> bool:
    if path in fleet.sources:
        return True
    if any(path in _files_of(spec) for spec in supervisor.specs.values()):
        return True
    # in a watched folder of agent folders: an agent folder, or the config in one
    return any(
        source.is_dir() and (path.parent == source or (path.parent.parent == source and path.name in CONFIG_NAMES))
        for source in fleet.sources
    )


def _log_changes(changes: set[tuple[Change, str]]) -> None:
    for change, path in sorted(changes, key=lambda item: item[1]):
        log.info("config %s: %s", change.name, path)


async def apply(sources: Sequence[Path], supervisor: Supervisor, locks: StateLocks, registry: RegistrySettings) -> None:
    desired = reload_specs(sources, supervisor.specs, registry)
    if desired is None:
        return
    current = supervisor.specs
    removed = [config for config in current if config not in desired]
    changed = [config for config, spec in desired.items() if config in current and current[config] != spec]
    added = [config for config in desired if config not in current]
    for config in removed:
        log.info("[%s] its config is gone (%s); stopping it", current[config].name, config)
    for config in changed:
        log.info("[%s] its config changed; restarting it", current[config].name)
    await supervisor.stop([*removed, *changed])  # first, so that a port or a name can move between agents
    starting = [desired[config] for config in [*changed, *added]]
    locks.keep_only([*supervisor.specs.values(), *starting])
    for spec in starting:
        try:
            locks.claim(spec)
        except FolderBusy as exc:
            log.error("%s; it is not started", exc)
            continue
        supervisor.start(spec)


def reload_specs(
    sources: Sequence[Path], current: dict[Path, AgentSpec], registry: RegistrySettings
) -> dict[Path, AgentSpec] | None:
    """The agents the files describe now; an agent whose config fails keeps its current spec. None: change nothing."""
    try:
        found = discover(sources, strict=False)
    except ConfigError as exc:
        log.error("fleet not reloaded: %s", exc)
        return None
    desired: dict[Path, AgentSpec] = {}
    for source in found.configs:
        try:
            desired[source.config] = load_agent(source)
        except ConfigError as exc:
            if source.config in current:
                log.error("%s\n[%s] keeps running with its previous config", exc, current[source.config].name)
                desired[source.config] = current[source.config]
            else:
                log.error("%s\nthis agent is not started", exc)
    try:
        check_fleet(desired.values(), found.remotes, registry)
    except ConfigError as exc:
        log.error("fleet not reloaded: %s", exc)
        return None
    return desired
