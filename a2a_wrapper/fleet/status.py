"""`a2a-wrap status`: the registry's agents as a table, with what each waits for from a person; `--watch`
redraws it every few seconds until Ctrl-C.

The waiting approvals and questions are read from each running agent's own /metrics
(`a2a_wrapper_approvals_waiting`, by kind), at the agent's URL as the registry lists it.
"""

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

import httpx
from prometheus_client.parser import text_string_to_metric_families

from a2a_wrapper.errors import WrapperError
from a2a_wrapper.text_table import text_table

DEFAULT_REGISTRY_URL = "http://127.0.0.1:8800"
WAITING_METRIC = "a2a_wrapper_approvals_waiting"
_TIMEOUT = 5.0
_CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen


@dataclass(frozen=True)
class Waiting:
    approvals: int = 0
    questions: int = 0


@dataclass
class Snapshot:
    agents: list[dict[str, Any]] = field(default_factory=list)
    waiting: dict[str, Waiting | None] = field(default_factory=dict)  # by name; None: its /metrics did not answer


async def _agents(http: httpx.AsyncClient, registry_url: str) -> list[dict[str, Any]]:
    url = registry_url.rstrip("/") + "/agents"
    try:
        response = await http.get(url)
        response.raise_for_status()
        agents = response.json()["agents"]
    except httpx.HTTPError as exc:
        raise WrapperError(
            f"the registry at {registry_url} is not reachable ({type(exc).__name__}: {exc}); "
            "is `a2a-wrap fleet` (or `a2a-wrap registry`) running there?"
        ) from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise WrapperError(f"{url} did not answer with a registry's agent list") from exc
    return list(agents)


async def snapshot(http: httpx.AsyncClient, registry_url: str) -> Snapshot:
    """The agents, and what each running one waits for (read at once from every agent)."""
    agents = await _agents(http, registry_url)
    running = [agent for agent in agents if agent.get("state") == "running"]
    counts = await asyncio.gather(*(_waiting(http, str(agent["url"])) for agent in running))
    return Snapshot(agents, {str(agent["name"]): count for agent, count in zip(running, counts, strict=True)})


async def _waiting(http: httpx.AsyncClient, url: str) -> Waiting | None:
    try:
        response = await http.get(url.rstrip("/") + "/metrics")
        response.raise_for_status()
        families = list(text_string_to_metric_families(response.text))
    except (httpx.HTTPError, ValueError):
        return None
    samples = [s for family in families if family.name == WAITING_METRIC for s in family.samples]
    by_kind = {sample.labels.get("kind"): int(sample.value) for sample in samples}
    return Waiting(by_kind.get("approval", 0), by_kind.get("question", 0)) if samples else None


def format_status(agents: list[dict[str, Any]], waiting: dict[str, Waiting | None] | None = None) -> str:
    """The table; with `waiting`, a column of the approvals (and questions) each agent waits on."""
    if not agents:
        return "the registry lists no agents\n"
    header = ("name", "state", "url", "backend", "model", "skills", "health", "restarts")
    rows = [header + (("approvals",) if waiting is not None else ())]
    for agent in agents:
        row = (
            str(agent["name"]),
            str(agent["state"]),
            str(agent["url"]),
            str(agent.get("backend") or "-"),
            model_of(agent),
            ", ".join(str(skill["id"]) for skill in agent.get("skills") or []) or "-",
            _health(agent.get("last_health")),
            "-" if agent.get("restarts") is None else str(agent["restarts"]),
        )
        rows.append(row + ((_waiting_cell(agent, waiting),) if waiting is not None else ()))
    return text_table(rows)


def model_of(agent: dict[str, Any]) -> str:
    """The model its config names, else the one its backend reports on /health, else `-`."""
    backend = (agent.get("last_health") or {}).get("backend") or {}
    reported = backend.get("model") if isinstance(backend, dict) else None
    return str(agent.get("model") or reported or "-")


def _waiting_cell(agent: dict[str, Any], waiting: dict[str, Waiting | None]) -> str:
    name = str(agent["name"])
    if name not in waiting:
        return "-"  # not running
    count = waiting[name]
    if count is None:
        return "?"  # its /metrics did not answer
    questions = f" + {count.questions} question{'s' if count.questions != 1 else ''}" if count.questions else ""
    return f"{count.approvals}{questions}"


def _health(health: dict[str, Any] | None) -> str:
    if not health:
        return "-"
    when = str(health.get("time", ""))[11:19]  # HH:MM:SS of the ISO time
    if health.get("healthy"):
        return f"ok at {when}"
    reason = health.get("error") or f"HTTP {health.get('status_code')}"
    return f"failing at {when}: {reason}"[:60]


async def show_status(registry_url: str, out: TextIO) -> None:
    async with httpx.AsyncClient(timeout=_TIMEOUT) as http:
        current = await snapshot(http, registry_url)
    out.write(format_status(current.agents, current.waiting))


async def watch_status(registry_url: str, interval: float, out: TextIO) -> None:
    """Redraws the table every `interval` seconds until SIGINT or SIGTERM; a registry that does not answer is
    said in the frame, and the next frame tries again."""
    with stop_on_signals() as stop:
        async with httpx.AsyncClient(timeout=min(_TIMEOUT, max(interval, 1.0))) as http:
            while not stop.is_set():
                out.write(await _frame(http, registry_url, interval, clear=out.isatty()))
                out.flush()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), interval)


async def _frame(http: httpx.AsyncClient, registry_url: str, interval: float, clear: bool) -> str:
    title = f"{registry_url}  {datetime.now().strftime('%H:%M:%S')}  (every {interval:g} s; Ctrl-C ends)\n"
    try:
        current = await snapshot(http, registry_url)
        body = format_status(current.agents, current.waiting)
    except WrapperError as exc:
        body = f"{exc}\n"
    return (_CLEAR if clear else "\n") + title + body


@contextlib.contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """SIGINT and SIGTERM only set the event; the loop ends on it (exit 0)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
