"""Each supervised agent's output, kept by the fleet in a file of its own for `a2a-wrap logs NAME`.

The fleet's stderr multiplexes every agent line by line (honcho's way); the same lines, and the fleet's
lifecycle notes about the agent, also go to `<agent's state folder>/logs/fleet.log`, time-stamped. At
MAX_BYTES the file is rotated once (`fleet.log.1`), so an agent's log never grows without bound.
"""

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

log = logging.getLogger(__name__)
MAX_BYTES = 2 * 1024 * 1024


def log_path(state_dir: Path) -> Path:
    return state_dir / "logs" / "fleet.log"


class AgentLog:
    """Appends lines to an agent's log file, rotating it at `max_bytes`; a write that fails is logged once."""

    def __init__(self, path: Path, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self._max_bytes = max_bytes
        self._file: TextIO | None = None
        self._size = 0
        self._failed = False

    def line(self, text: str) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
        entry = f"{stamp} {text}\n"
        try:
            self._open()
            assert self._file is not None
            if self._size + len(entry) > self._max_bytes and self._size:
                self._rotate()
            self._file.write(entry)
            self._file.flush()
            self._size += len(entry.encode(errors="replace"))
        except OSError as exc:
            if not self._failed:  # once: a full disk must not flood the fleet's own log
                log.error("cannot write the agent log %s: %s", self.path, exc)
            self._failed = True

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _open(self) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8", errors="replace")
            self._size = self.path.stat().st_size

    def _rotate(self) -> None:
        self.close()
        self.path.replace(self.path.with_name(self.path.name + ".1"))
        self._open()
