"""`a2a-wrap fleet`: one `a2a-wrap serve` per agent config, supervised, hot-reloaded, listed by a registry."""

from a2a_wrapper.fleet.fleet_file import RegistrySettings, RestartPolicy
from a2a_wrapper.fleet.lifecycle import run_fleet, run_registry
from a2a_wrapper.fleet.loader import load_fleet
from a2a_wrapper.fleet.spec import AgentSpec, Fleet, RemoteSpec

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
