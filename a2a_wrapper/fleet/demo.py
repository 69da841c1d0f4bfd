"""`a2a-wrap demo`: the fleet on the offline model, no key needed.

Three agents on three providers — OpenCode, Copilot CLI (through github-copilot-sdk) and Copilot's ACP mode
(`copilot --acp`, the generic ACP backend) — each its own `a2a-wrap serve`, behind one registry. The demo
writes their configs into its state folder (they name the installed binaries and the offline model's port)
and runs them as `a2a-wrap fleet` would.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.config.files import default_state_dir
from a2a_wrapper.fleet.lifecycle import run_fleet
from a2a_wrapper.fleet.loader import load_fleet
from a2a_wrapper.offline_model import MODEL_ID, SMALL_MODEL_ID, OfflineModel

# Shell commands, edits and fetches are put to the caller (input-required); reads are allowed.
DEMO_SHIELD = {"defaults": {"read": "allow"}}


def _card(name: str, description: str, skill: str, tags: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "skills": [{"id": skill, "name": skill.replace("-", " ").capitalize(), "tags": tags}],
    }


def demo_agents(model: OfflineModel, state_dir: Path) -> dict[str, dict[str, Any]]:
    """The three agents' configs, by name."""
    provider_url = model.base_url
    cache = state_dir / "copilot-cache"  # both Copilot agents share one unpacked CLI (~235 MB)
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


def write_fleet(model: OfflineModel, state_dir: Path, registry_port: int) -> Path:
    """One folder per agent with its config, and the fleet file naming them; returns the fleet file."""
    agents = []
    for offset, (name, config) in enumerate(demo_agents(model, state_dir).items(), start=1):
        folder = state_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        config = {
            **config,
            "server": {"port": registry_port + offset},
            "shield": DEMO_SHIELD,
            "state_dir": str(folder / "state"),
        }
        (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        agents.append({"config": f"{name}/config.yaml"})
    fleet_file = state_dir / "fleet.yaml"
    fleet = {"registry": {"host": "127.0.0.1", "port": registry_port}, "agents": agents}
    fleet_file.write_text(yaml.safe_dump(fleet, sort_keys=False))
    return fleet_file


async def run_demo(registry_port: int, state_dir: Path | None, announce: Callable[[str], None]) -> None:
    """Runs until interrupted; `announce` shows the user where things are."""
    state_dir = (state_dir or default_state_dir("demo")).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    async with OfflineModel() as model:
        fleet = load_fleet([write_fleet(model, state_dir, registry_port)])
        registry = f"http://127.0.0.1:{registry_port}"
        announce(f"offline model: {model.base_url}")
        announce(f"registry:      {registry}/agents   (the agents' cards, states and skills)")
        for agent in fleet.agents:
            announce(f"agent:         {agent.name:<15} {agent.card_url}")
        announce("try (once the agents are running):")
        announce(f"  a2a-wrap status --registry {registry}")
        first = fleet.agents[0].url
        announce(f'  a2a-wrap send {first} "hello"')
        arguments = '{"command": "ls -la", "description": "list the workspace"}'
        announce(f"  a2a-wrap send {first} '[[tool:bash {arguments}]]'   (asks you before it runs)")
        await run_fleet(fleet)
