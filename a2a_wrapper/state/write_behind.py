"""Rows another store has the task writer write behind the turn, in its transaction (SQLite only).

The task writer (task_store.py) commits every task it holds in one transaction a moment after the turn's events.
A store whose rows may wait as long, and may be lost with the tasks by a crash in that moment, rides along: one
commit for both, none on the request's path. The message ledger's claims do (message_ledger.py).
"""

from typing import Any, Protocol

Row = tuple[Any, ...]


class Rider(Protocol):
    sql: str  # one statement, run for each row

    def holds_unwritten(self) -> bool: ...

    def unwritten(self) -> list[Row]:
        """The rows to write now (taken in the writer's turn, so nothing changes them meanwhile)."""
        ...

    def written(self, rows: list[Row]) -> None:
        """`rows` are committed (or given up on: the writer logged why)."""
        ...


class Writer(Protocol):
    def carry(self, rider: Rider) -> None:
        """`rider`'s rows go with every write from now on."""
        ...

    def wake(self) -> None:
        """Write soon, even with no task saved."""
        ...
