"""Which running turn a session's requests go to: the backend's callbacks arrive by session id, one turn each."""

from typing import Generic, TypeVar

Target = TypeVar("Target")


class SessionRouter(Generic[Target]):
    def __init__(self) -> None:
        self._running: dict[str, Target] = {}

    def open(self, session_id: str, target: Target) -> None:
        self._running[session_id] = target

    def close(self, session_id: str, target: Target) -> None:
        """Only `target` itself is removed: a later turn of the session may have taken its place."""
        if self._running.get(session_id) is target:
            del self._running[session_id]

    def get(self, session_id: str) -> Target | None:
        return self._running.get(session_id)

    def take_all(self) -> list[Target]:
        """Every running target, forgotten here (the backend process they ran in is gone)."""
        running = list(self._running.values())
        self._running.clear()
        return running
