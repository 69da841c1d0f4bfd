"""`a2a-wrap demo`: the fleet on the offline model, no key needed.

Three agents on three providers — OpenCode, Copilot CLI (through github-copilot-sdk) and Copilot's ACP mode
(`copilot --acp`, the generic ACP backend) — each its own `a2a-wrap serve`, behind one registry. The demo
writes their configs into its state folder (they name the installed binaries and the offline model's port)
and runs them as `a2a-wrap fleet` would.

Every agent serves all three A2A bindings, so its card lists each: JSON-RPC and REST on its HTTP port, gRPC on
a port of its own. Two demos on one machine: each registry port has its own state folder (`demo` for the
default port, `demo-PORT` otherwise); the agents take the three ports after the registry's for HTTP and the
three after those for gRPC, a block of seven ports, and a second demo is offered a registry port ten further on
(a block that cannot overlap the first's). The folder is locked for
the run (see ownership: a lock keeps the agents' tasks, workspaces and unpacked Copilot CLI for the next run,
where a folder per run would throw them away), so a second demo on the same folder is refused with a sentence
naming the first one's pid and saying how to run a second one, before it writes anything.
"""

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.command import command_prefix
from a2a_wrapper.config.files import default_state_dir
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.fleet.fleet_file import DEFAULT_REGISTRY_PORT
from a2a_wrapper.fleet.lifecycle import run_fleet
from a2a_wrapper.fleet.loader import load_fleet
from a2a_wrapper.fleet.spec import Fleet
from a2a_wrapper.fleet.supervisor import SupervisedAgent
from a2a_wrapper.offline_model import MODEL_ID, SMALL_MODEL_ID, OfflineModel
from a2a_wrapper.ports import bind_port
from a2a_wrapper.state.lock import FolderBusy, FolderLock

# Shell commands, edits and fetches are put to the caller (input-required); reads are allowed.
DEMO_SHIELD = {"defaults": {"read": "allow"}}
AGENT_NAMES = ("opencode-coder", "copilot-coder", "acp-reviewer")  # on the registry's port + 1, + 2, + 3
DEMO_PORTS = 1 + 2 * len(AGENT_NAMES)  # the registry's, then each agent's HTTP port, then each agent's gRPC port
SECOND_DEMO_STEP = 10  # a second demo's registry port is this much further on: its block cannot overlap
DemoOperator = tuple[str, str]  # (name, the environment variable holding the key), as --operator NAME:ENV_VAR


def _card(name: str, description: str, skill: str, tags: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "skills": [{"id": skill, "name": skill.replace("-", " ").capitalize(), "tags": tags}],
    }


def demo_agents(model: OfflineModel, state_dir: Path) -> dict[str, dict[str, Any]]:
    """The three agents' configs, by name."""
    provider_url = model.base_url
    cache = state_dir / "copilot-cache"  # where Copilot over ACP unpacks its CLI (~235 MB), and both keep caches
    return {
        "opencode-coder": {
            "card": _card("opencode-coder", "OpenCode on the offline model.", "coding", ["coding", "opencode"]),
            "backend": {
                "kind": "opencode",
                "binary": str(find_binary("opencode")),
                "model": f"offline/{MODEL_ID}",
                "provider": {"id": "offline", "base_url": provider_url, "models": [MODEL_ID, SMALL_MODEL_ID]},
            },
        },
        "copilot-coder": {
            "card": _card("copilot-coder", "GitHub Copilot CLI on the offline model.", "coding", ["coding", "copilot"]),
            "backend": {
                "kind": "copilot",
                "binary": str(find_binary("copilot")),
                "model": MODEL_ID,
                "provider": {"type": "openai", "base_url": provider_url, "api_key": "offline"},
                "env": {"XDG_CACHE_HOME": str(cache)},
            },
        },
        "acp-reviewer": {
            "card": _card("acp-reviewer", "Copilot's ACP mode on the offline model.", "review", ["review", "acp"]),
            "backend": {
                "kind": "acp",
                "command": [str(find_binary("copilot")), "--acp"],
                "model": MODEL_ID,  # COPILOT_MODEL below picks it; copilot --acp does not name it itself
                "env": {
                    "COPILOT_OFFLINE": "true",
                    "COPILOT_PROVIDER_BASE_URL": provider_url,
                    "COPILOT_PROVIDER_API_KEY": "offline",
                    "COPILOT_MODEL": MODEL_ID,
                    "XDG_CACHE_HOME": str(cache),
                },
            },
        },
    }


def write_fleet(
    model: OfflineModel, state_dir: Path, registry_port: int, operators: Sequence[DemoOperator] = ()
) -> Path:
    """One folder per agent with its config, and the fleet file naming them (and the console's operators);
    returns the fleet file."""
    agents = []
    for offset, (name, config) in enumerate(demo_agents(model, state_dir).items(), start=1):
        folder = state_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        config = {
            **config,
            "server": {"port": registry_port + offset, "grpc_port": registry_port + len(AGENT_NAMES) + offset},
            "shield": DEMO_SHIELD,
            "state_dir": str(folder / "state"),
        }
        (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        agents.append({"config": f"{name}/config.yaml"})
    fleet_file = state_dir / "fleet.yaml"
    registry: dict[str, Any] = {"host": "127.0.0.1", "port": registry_port}
    if operators:
        registry["operators"] = [{"name": name, "key_env": key_env} for name, key_env in operators]
    fleet = {"registry": registry, "agents": agents}
    fleet_file.write_text(yaml.safe_dump(fleet, sort_keys=False))
    return fleet_file


def demo_state_dir(registry_port: int) -> Path:
    """One folder per registry port, so that demos on different ports never share one."""
    return default_state_dir("demo" if registry_port == DEFAULT_REGISTRY_PORT else f"demo-{registry_port}")


def _ports_free(registry_port: int) -> bool:
    try:
        for port in range(registry_port, registry_port + DEMO_PORTS):
            bind_port("127.0.0.1", port, "demo").close()
    except ConfigError:
        return False
    return True


def _second_demo_port(registry_port: int) -> int:
    """A registry port after this one whose block (registry and agents) is free now."""
    candidates = range(registry_port + SECOND_DEMO_STEP, 65536 - DEMO_PORTS, SECOND_DEMO_STEP)
    return next((port for port in candidates if _ports_free(port)), registry_port + SECOND_DEMO_STEP)


def _check_ports(registry_port: int) -> None:
    grpc = tuple(f"{name}'s gRPC" for name in AGENT_NAMES)
    for offset, who in enumerate(("the registry", *AGENT_NAMES, *grpc)):
        try:
            bind_port("127.0.0.1", registry_port + offset, f"demo ({who})").close()
        except ConfigError as exc:
            other = _second_demo_port(registry_port)
            raise ConfigError(
                f"{exc}; the demo takes --port {registry_port} and the {DEMO_PORTS - 1} ports after it: "
                f"try `{command_prefix()} demo --port {other}`"
            ) from None


@contextlib.contextmanager
def _claimed(folder: Path, registry_port: int, state_dir_given: bool) -> Iterator[None]:
    """The demo's folder locked before anything is written in it; a second demo on it is refused saying how."""
    lock = FolderLock(folder)
    try:
        lock.acquire()
    except FolderBusy as exc:
        other = _second_demo_port(registry_port)
        advice = f"{command_prefix()} demo --port {other}" + (" --state-dir ANOTHER_FOLDER" if state_dir_given else "")
        where = "" if state_dir_given else f" (its state goes to {demo_state_dir(other)})"
        raise ConfigError(
            f"another demo runs here: {exc}. A second demo needs its own ports and folder: `{advice}`{where}"
        ) from None
    try:
        yield
    finally:
        lock.release()


class Announcements:
    """What the user sees on stdout: where things are, each agent as it is ready, then what to try."""

    def __init__(self, fleet: Fleet, announce: Callable[[str], None]) -> None:
        self._fleet = fleet
        self._announce = announce
        self._started = time.monotonic()
        self._ready: set[str] = set()
        self._registry = f"http://127.0.0.1:{fleet.registry.port}"

    def where(self, model: OfflineModel, state_dir: Path) -> None:
        say = self._announce
        say(f"offline model: {model.base_url}")
        say(f"registry:      {self._registry}/agents   (the agents' cards, states and skills)")
        say(f"console:       {self._registry}/console   ({self._who_signs_in()})")
        say(f"state:         {state_dir}   (this demo's own; a second demo takes another --port)")
        for agent in self._fleet.agents:
            say(f"agent:         {agent.name:<15} {agent.url}   workspace {agent.settings.backend.workdir}")
        say(f"starting {len(self._fleet.agents)} agents (a first start unpacks Copilot's CLI: a minute or so)")

    def _who_signs_in(self) -> str:
        operators = [operator.name for operator in self._fleet.registry.operators]
        if not operators:
            return "open the one-time sign-in link printed below; --operator NAME:ENV_VAR adds one who signs in"
        return "sign in as " + " or ".join(operators) + " with the key in its variable"

    def running(self, agent: SupervisedAgent) -> None:
        seconds = time.monotonic() - self._started
        again = " again" if agent.name in self._ready else ""
        self._announce(f"ready{again}:  {agent.name:<15} pid {agent.pid}, {seconds:.0f} s after the demo started")
        if agent.name not in self._ready:
            self._ready.add(agent.name)
            if len(self._ready) == len(self._fleet.agents):
                self._all_running()

    def _all_running(self) -> None:
        say = self._announce
        a2a_wrap = command_prefix()
        first = self._fleet.agents[0].url
        arguments = '{"command": "ls -la", "description": "list the workspace"}'
        say(f"all {len(self._fleet.agents)} agents running (registry at {self._registry}/agents)")
        say("try, from any folder:")
        say(f"  {a2a_wrap} status --registry {self._registry}")
        say(f'  {a2a_wrap} send {first} "hello"')
        say(f"  {a2a_wrap} send {first} '[[tool:bash {arguments}]]'   (asks you before it runs)")
        if not self._fleet.registry.operators:
            say("and answer it in the console: open the `console sign-in:` link printed above (it signs in once)")
        say("Ctrl-C stops everything (the agents and their backends; a second Ctrl-C kills them at once).")


async def run_demo(
    registry_port: int,
    state_dir: Path | None,
    announce: Callable[[str], None],
    operators: Sequence[DemoOperator] = (),
) -> None:
    """Runs until interrupted; `announce` shows the user where things are. `operators` sign in to the console,
    each with the key in its environment variable."""
    folder = (state_dir or demo_state_dir(registry_port)).resolve()
    with _claimed(folder, registry_port, state_dir is not None):
        _check_ports(registry_port)
        async with OfflineModel() as model:
            fleet = load_fleet([write_fleet(model, folder, registry_port, operators)])
            announcements = Announcements(fleet, announce)
            announcements.where(model, folder)
            await run_fleet(fleet, announce, announcements.running)
    announce("stopped: every agent and its backend")
