"""The shape every runtime's backend process has: started with a ready pattern, awaited, stopped."""

import re
from typing import Protocol


class Child(Protocol):
    name: str

    @property
    def pid(self) -> int | str | None:
        """The process id, or the container's short id."""

    @property
    def running(self) -> bool: ...

    async def start(self, ready_pattern: str) -> None: ...

    async def wait_ready(self, timeout: float) -> re.Match[str]: ...

    def last_output(self) -> str: ...

    async def wait(self) -> int: ...

    async def stop(self, grace: float = 5.0) -> None: ...
