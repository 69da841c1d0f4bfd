"""The fleet's hold on the state folder of each agent it supervises (state/lock.py: why a lock)."""

from collections.abc import Iterable
from pathlib import Path

from a2a_wrapper.fleet.spec import AgentSpec
from a2a_wrapper.state.lock import FolderBusy, FolderLock


class StateLocks:
    """The fleet's hold on each supervised agent's state folder, claimed before the agent starts."""

    def __init__(self) -> None:
        self._held: dict[Path, FolderLock] = {}

    def claim(self, spec: AgentSpec) -> None:
        """Raises FolderBusy naming the agent, its folder and the other process."""
        folder = spec.settings.state_dir
        assert folder is not None  # load_config always resolves one
        if folder in self._held:
            return
        lock = FolderLock(folder)
        try:
            lock.acquire()
        except FolderBusy as exc:
            raise FolderBusy(
                folder, f"{exc.holder}; agent {spec.name!r} ({spec.config}) cannot run twice on one state folder"
            ) from None
        self._held[folder] = lock

    def keep_only(self, specs: Iterable[AgentSpec]) -> None:
        """Release the folders no agent in `specs` uses any more."""
        used = {spec.settings.state_dir for spec in specs}
        for folder in [folder for folder in self._held if folder not in used]:
            self._held.pop(folder).release()

    def release_all(self) -> None:
        self.keep_only(())
