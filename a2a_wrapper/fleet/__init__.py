"""`a2a-wrap fleet`: one `a2a-wrap serve` per agent config, supervised, hot-reloaded, listed by a registry.

The names below load on first use (PEP 562), so that `a2a-wrap status` and `logs`, which import
`fleet.status` and `fleet.logs` alone, do not load the fleet's supervisor, its configs and the agents' settings.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2a_wrapper.fleet.fleet_file import RegistrySettings, RestartPolicy
    from a2a_wrapper.fleet.lifecycle import run_fleet, run_registry
    from a2a_wrapper.fleet.loader import load_fleet
    from a2a_wrapper.fleet.spec import AgentSpec, Fleet, RemoteSpec

_WHERE = {
    "AgentSpec": "spec",
    "Fleet": "spec",
    "RemoteSpec": "spec",
    "RegistrySettings": "fleet_file",
    "RestartPolicy": "fleet_file",
    "load_fleet": "loader",
    "run_fleet": "lifecycle",
    "run_registry": "lifecycle",
}
__all__ = [
    "AgentSpec",
    "Fleet",
    "RegistrySettings",
    "RemoteSpec",
    "RestartPolicy",
    "load_fleet",
    "run_fleet",
    "run_registry",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
