"""`a2a-wrap logs NAME`: a fleet agent's recent lines from the file the fleet keeps (see agent_log.py), and,
with `--follow`, the lines that come after, until Ctrl-C.

The registry names the file (`log` in the agent's entry); an agent the fleet only lists has none.
"""

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import httpx

from a2a_wrapper.errors import WrapperError
from a2a_wrapper.fleet.status import stop_on_signals

_FOLLOW_PACE = 0.3  # seconds between looks at the file: a file has no event to await (tail -f does the same)


async def log_of(registry_url: str, name: str) -> Path:
    """The agent's log file, as the registry names it; a name it does not have is refused listing those it has."""
    url = f"{registry_url.rstrip('/')}/agents/{name}"
    try:
        async with httpx.AsyncClient(timeout=5.0) as http:
            response = await http.get(url)
        entry = response.json()
    except httpx.HTTPError as exc:
        raise WrapperError(
            f"the registry at {registry_url} is not reachable ({type(exc).__name__}: {exc}); "
            "is `a2a-wrap fleet` running there?"
        ) from exc
    except ValueError as exc:
        raise WrapperError(f"{url} did not answer with a registry's agent entry") from exc
    if response.status_code == 404 and isinstance(entry, dict) and entry.get("error"):
        raise WrapperError(str(entry["error"]))
    if response.status_code != 200 or not isinstance(entry, dict):
        raise WrapperError(f"{url} answered HTTP {response.status_code}")
    if not entry.get("log"):
        raise WrapperError(
            f"agent {name!r} runs elsewhere ({entry.get('url')}); the fleet only lists it and keeps no log of it: "
            "read its log where it runs (for one in docker compose: docker compose logs)"
        )
    return Path(str(entry["log"]))


def recent_lines(path: Path, count: int) -> list[str]:
    """The last `count` lines, from the rotated file too when the current one holds fewer."""
    lines: list[str] = []
    for part in (path, path.with_name(path.name + ".1")):
        if len(lines) >= count:
            break
        with contextlib.suppress(FileNotFoundError):
            lines = part.read_text(encoding="utf-8", errors="replace").splitlines() + lines
    return lines[-count:] if count else []


def show_recent(path: Path, count: int, out: TextIO, follow: bool) -> None:
    if not path.exists() and not follow:
        raise WrapperError(f"no log yet at {path}: the fleet writes it once the agent has started")
    for line in recent_lines(path, count):
        out.write(line + "\n")
    out.flush()


@dataclass
class _Cursor:
    inode: int | None = None
    position: int = 0
    pending: bytes = b""  # a line not ended yet


async def follow_log(path: Path, out: TextIO) -> None:
    """New lines as they are written, until SIGINT or SIGTERM; a rotated (or recreated) file is read from its start."""
    cursor = await asyncio.to_thread(_at_end, path)
    with stop_on_signals() as stop:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), _FOLLOW_PACE)
            for line in await asyncio.to_thread(_new_lines, path, cursor):
                out.write(line + "\n")
            out.flush()


def _at_end(path: Path) -> _Cursor:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return _Cursor()
    return _Cursor(stat.st_ino, stat.st_size)


def _new_lines(path: Path, cursor: _Cursor) -> list[str]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return []
    if stat.st_ino != cursor.inode or stat.st_size < cursor.position:
        cursor.inode, cursor.position, cursor.pending = stat.st_ino, 0, b""
    if stat.st_size == cursor.position:
        return []
    with path.open("rb") as file:
        file.seek(cursor.position)
        chunk = file.read()
    cursor.position += len(chunk)
    *complete, cursor.pending = (cursor.pending + chunk).split(b"\n")
    return [line.decode(errors="replace") for line in complete]
