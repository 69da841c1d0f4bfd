"""What the console watches: a version of the agent's live turns that bumps at every change a person would see
(a turn started, paused, answered or ended, a tool called), never per text delta.

Watchers wait for the version to move past the one they saw; a closed feed (the agent shutting down) wakes them
for good, so no stream holds up the shutdown.
"""

import asyncio


class Feed:
    def __init__(self) -> None:
        self.version = 0
        self.closed = False
        self._changed = asyncio.Event()

    def bump(self) -> None:
        """The live turns changed: every watcher wakes."""
        self.version += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    async def moved_past(self, version: int) -> bool:
        """Waits until the version is no longer `version`; False when the feed closed instead."""
        while self.version == version and not self.closed:
            await self._changed.wait()
        return not self.closed
