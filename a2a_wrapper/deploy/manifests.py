"""`a2a-wrap deploy kubernetes`: a fleet's configs as plain manifests in one folder, for `kubectl apply -k`.

The folder holds `namespace.yaml`, one `agent-<name>.yaml` per agent (its ConfigMap, Service, StatefulSet and
NetworkPolicy), `registry.yaml` (Deployment and Service), `kustomization.yaml` listing them, and a marker file
naming what the render wrote, so that the next render replaces exactly those files and nothing of the user's.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2a_wrapper.deploy.backend_pod import (
    BACKEND_POD_NOTE,
    BACKEND_POD_SAYS,
    SHARED_POD_SAYS,
    apart_runtime,
    backend_objects,
    channel_secret,
    with_channels,
    wrapper_alone,
)
from a2a_wrapper.deploy.network import NETWORK_POLICY_NOTE, agent_network_policy, agent_service
from a2a_wrapper.deploy.objects import dump_yaml, kustomization, namespace_object, object_name
from a2a_wrapper.deploy.options import KubernetesOptions
from a2a_wrapper.deploy.pod_config import POD_PORT, pod_config
from a2a_wrapper.deploy.workloads import (
    REGISTRY_SECRET,
    SECURITY_NOTE,
    agent_config_map,
    agent_stateful_set,
    registry_deployment,
    registry_keys,
    registry_service,
)
from a2a_wrapper.errors import ConfigError, WrapperError
from a2a_wrapper.fleet import AgentSpec, Fleet
from a2a_wrapper.fleet.loader import discover, load_agent

MARKER = ".a2a-wrap-render"
KUSTOMIZATION = "kustomization.yaml"
REGISTRY = "registry"  # the registry's Deployment and Service


@dataclass
class Rendering:
    """The files to write, the Secrets a user must create (name -> key -> optional), and what changed."""

    files: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, dict[str, bool]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def load_deployment(paths: Sequence[Path]) -> Fleet:
    """The agents the paths name, loaded as the fleet loads them; their ports do not matter (each pod has its
    own), their names must be unique (each names a Service)."""
    found = discover(paths)
    agents = tuple(load_agent(source) for source in found.configs)
    seen: dict[str, Path] = {}
    for agent in agents:
        if agent.name in seen:
            raise ConfigError(f"{seen[agent.name]} and {agent.config} both have card.name {agent.name!r}")
        seen[agent.name] = agent.config
    return Fleet(agents, tuple(found.remotes), found.registry, found.restart)


def render_kubernetes(fleet: Fleet, options: KubernetesOptions) -> Rendering:
    """Every object of the fleet as YAML text by file name, `kustomization.yaml` last."""
    rendering = Rendering(files={"namespace.yaml": documents([namespace_object(options.namespace)])})
    urls = []
    for agent in fleet.agents:
        name = object_name(agent.name, f"{agent.config}: card.name")
        if options.registry and name == REGISTRY:
            raise ConfigError(f"{agent.config}: card.name: {name!r} is the registry's name; rename the agent")
        url = f"http://{name}.{options.namespace}.svc:{POD_PORT}"
        text = _agent_file(agent, name, url, options, fleet.restart.stop_grace, rendering)
        rendering.files[f"agent-{name}.yaml"] = text
        urls.append(url)
    if options.registry:
        urls += [remote.url for remote in fleet.remotes]
        deployment = registry_deployment(options, urls, fleet.registry)
        rendering.files[f"{REGISTRY}.yaml"] = documents([deployment, registry_service(options.namespace)])
        if keys := registry_keys(fleet.registry):
            rendering.secrets[REGISTRY_SECRET] = dict.fromkeys(keys, False)
    if options.postgres_secret is not None:
        rendering.secrets[options.postgres_secret] = {"url": False}
    rendering.files[KUSTOMIZATION] = documents([kustomization(list(rendering.files))])
    return rendering


def _agent_file(
    agent: AgentSpec, name: str, url: str, options: KubernetesOptions, stop_grace: float, rendering: Rendering
) -> str:
    secret = f"{name}-keys"
    apart = options.backend_pod
    config = pod_config(agent, url, secret, apart_runtime(name, options.namespace) if apart else None)
    rendering.secrets[secret] = config.variables
    rendering.notes += [f"{name}: {note}" for note in config.notes]
    rendering.notes.append(f"{name}: {BACKEND_POD_SAYS.format(name=name) if apart else SHARED_POD_SAYS}")
    if apart:
        rendering.secrets[channel_secret(name)] = {"token": False}
    keys = ", ".join(f"{key}{' (optional)' if optional else ''}" for key, optional in config.variables.items())
    header = [
        f"# The agent {name}, rendered by `a2a-wrap deploy kubernetes` from {agent.config.parent.name}/"
        f"{agent.config.name}; it serves {url}.",
        f"# Its keys come from the Secret {secret}, which is not rendered: create it with {keys}.",
        *(f"# {note}." for note in config.notes),
    ]
    stateful_set = agent_stateful_set(name, options, config, agent.settings.runtime, stop_grace)
    policy = agent_network_policy(name, options.namespace, agent.settings, options.postgres_secret is not None)
    objects = [agent_config_map(name, options.namespace, config), agent_service(name, options.namespace)]
    if not apart:
        objects += [stateful_set, policy]
        return "\n".join(header) + "\n" + SECURITY_NOTE + NETWORK_POLICY_NOTE + documents(objects)
    objects += [wrapper_alone(stateful_set, name), with_channels(policy, name)]
    objects += backend_objects(name, options, agent.settings.runtime)
    return "\n".join(header) + "\n" + BACKEND_POD_NOTE + documents(objects)


def documents(objects: list[dict[str, Any]]) -> str:
    return "---\n".join(map(dump_yaml, objects))


def write_rendering(rendering: Rendering, folder: Path) -> None:
    """The files written into `folder`; a folder with other files and no marker of an earlier render is refused."""
    marker = folder / MARKER
    if folder.exists() and any(folder.iterdir()):
        if not marker.is_file():
            raise WrapperError(
                f"{folder}: the folder is not empty and was not written by `a2a-wrap deploy kubernetes` (it has no "
                f"{MARKER}); give -o an empty or new folder"
            )
        for earlier in marker.read_text(encoding="utf-8").splitlines()[1:]:
            if earlier and Path(earlier).name == earlier:  # a plain file name of this folder, nothing else
                (folder / earlier).unlink(missing_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in rendering.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    listing = "# written by `a2a-wrap deploy kubernetes`; the next render replaces these files\n"
    marker.write_text(listing + "".join(f"{name}\n" for name in rendering.files), encoding="utf-8")


def summary(rendering: Rendering, folder: Path, options: KubernetesOptions) -> str:
    """What was written, what changed, the Secrets to create and the command that applies it all."""
    lines = [f"wrote {folder}/ (namespace {options.namespace}): {', '.join(rendering.files)}"]
    lines += rendering.notes
    lines.append("Secrets to create before applying (never rendered; optional keys may be left out):")
    for secret, keys in rendering.secrets.items():
        listed = ", ".join(f"{key}{' (optional)' if optional else ''}" for key, optional in keys.items())
        lines.append(f"  {secret}: {listed or '(no keys)'}")
    lines.append(f"  e.g. kubectl -n {options.namespace} create secret generic NAME --from-literal=KEY=VALUE")
    lines.append(f"The image {options.image} must be in a registry the cluster pulls from (--image).")
    lines.append(f"Apply: kubectl apply -k {folder}")
    return "\n".join(lines)
