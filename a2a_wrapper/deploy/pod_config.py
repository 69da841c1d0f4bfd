"""An agent's config as its pod reads it: the agent's own file, rewritten for the pod's paths, port and runtime.

The file is taken as written (`${VAR}` references kept), never as loaded: a loaded config holds the values its
variables had here, and those may be keys. In the pod, each variable is read from the agent's Secret at start.
"""

from dataclasses import dataclass, field
from typing import Any

from pydantic.alias_generators import to_camel

from a2a_wrapper.config.files import VARIABLE
from a2a_wrapper.config.node import is_node_config, translate_node_config
from a2a_wrapper.config.secrets import secret_fields
from a2a_wrapper.config.source import read_config_file
from a2a_wrapper.deploy.objects import dump_yaml
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.fleet import AgentSpec

POD_PORT = 8000
DATA_MOUNT = "/data"  # the PersistentVolumeClaim: state and workspace
CONFIG_MOUNT = "/config"  # the ConfigMap, read-only
CONFIG_FILE = "config.yaml"
OPERATOR_RULES_FILE = "operator-rules.yaml"


@dataclass
class PodConfig:
    """The ConfigMap's files, the variables the pod reads from the agent's Secret, and what changed, in sentences."""

    files: dict[str, str]
    variables: dict[str, bool] = field(default_factory=dict)  # name -> optional (unset leaves a default or nothing)
    notes: list[str] = field(default_factory=list)


def pod_config(agent: AgentSpec, advertise_url: str, secret: str) -> PodConfig:
    """`agent`'s config for its pod; a literal key (which would land in the ConfigMap) is refused naming it."""
    raw = read_config_file(agent.config)
    data = translate_node_config(raw) if is_node_config(raw) else raw
    refuse_literal_keys(agent, data, secret)
    config = PodConfig(files={})
    _rewrite_server(agent, data, advertise_url)
    _rewrite_backend(agent, data)
    _rewrite_runtime(agent, data, config)
    _set(data, "state_dir", f"{DATA_MOUNT}/state")
    if agent.settings.operator_rules is not None:
        config.files[OPERATOR_RULES_FILE] = agent.settings.operator_rules.read_text(encoding="utf-8")
        _set(data, "operator_rules", f"{CONFIG_MOUNT}/{OPERATOR_RULES_FILE}")
    config.files[CONFIG_FILE] = dump_yaml(data)
    config.variables = key_variables(agent, data)
    return config


def refuse_literal_keys(agent: AgentSpec, data: dict[str, Any], secret: str) -> None:
    """Every key the config model holds as a secret must be written as `${VAR}`, which the pod reads from `secret`."""
    for location, _ in secret_fields(agent.settings):
        written = _lookup(data, location)
        if isinstance(written, str) and VARIABLE.search(written):
            continue
        dotted = ".".join(location)
        source = "the config holds a literal value" if written is not None else "it is not in the config file"
        raise ConfigError(
            f"{agent.config}: {dotted}: {source}, and a key is never written into a manifest; write it as "
            f"${{VAR}} (e.g. {location[-1]}: ${{MY_PROVIDER_KEY}}) and put its value in the Secret {secret}"
        )


def key_variables(agent: AgentSpec, data: dict[str, Any]) -> dict[str, bool]:
    """Each variable the pod needs, and whether it may be left out: every `${VAR}` of the file (the renderer cannot
    tell a key from a setting, so all come from the Secret), the callers' and the signing key's `key_env`
    (required) and the console's (optional: unset, the operator endpoint is closed)."""
    variables: dict[str, bool] = {}
    for text in _strings(data):
        for match in VARIABLE.finditer(text):
            name, has_default = match.group(1), match.group(2) is not None
            variables[name] = variables.get(name, True) and has_default
    settings = agent.settings
    for caller in settings.auth.callers:
        variables[caller.key_env] = False
    if settings.card.signing is not None:
        variables[settings.card.signing.key_env] = False
    variables.setdefault(settings.console.key_env, True)
    return dict(sorted(variables.items()))


def _rewrite_server(agent: AgentSpec, data: dict[str, Any], advertise_url: str) -> None:
    if agent.settings.server.grpc_port is not None:
        raise ConfigError(
            f"{agent.config}: server.grpc_port: {agent.settings.server.grpc_port}: the Kubernetes manifests serve "
            f"A2A over HTTP on port {POD_PORT} only; remove it"
        )
    server = _section(data, "server")
    _set(server, "host", "0.0.0.0")
    _set(server, "port", POD_PORT)
    _set(server, "advertise_url", advertise_url)


def _rewrite_backend(agent: AgentSpec, data: dict[str, Any]) -> None:
    backend = _section(data, "backend")
    if _lookup(backend, ("binary",)) is not None:
        raise ConfigError(
            f"{agent.config}: backend.binary: a program on this machine, not in the image (which has the managed "
            "installs of opencode and copilot); remove it"
        )
    _set(backend, "workdir", f"{DATA_MOUNT}/workspace")
    if agent.settings.backend.system_prompt_file is not None:  # the file's text, as the agent would read it
        for spelling in ("system_prompt_file", to_camel("system_prompt_file")):
            backend.pop(spelling, None)
        _set(backend, "system_prompt", agent.settings.backend.system_prompt)


def _rewrite_runtime(agent: AgentSpec, data: dict[str, Any], config: PodConfig) -> None:
    kind = agent.settings.runtime.kind
    if kind != "process":
        reason = {
            "sandbox": "bubblewrap needs user namespaces and a fresh /proc, which a restricted pod refuses",
            "docker": "a pod has no container engine; the pod is the container",
        }[kind]
        config.notes.append(f"runtime.kind {kind} becomes process: {reason}; the pod is the agent's boundary")
    _set(data, "runtime", {"kind": "process"})


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    section = _lookup(data, (key,))
    section = dict(section) if isinstance(section, dict) else {}
    _set(data, key, section)
    return section


def _set(section: dict[str, Any], key: str, value: Any) -> None:
    """`key` set where the file had it, in whichever spelling (the config takes snake_case and camelCase)."""
    items = [(key, value) if name in (key, to_camel(key)) else (name, item) for name, item in section.items()]
    section.clear()
    section.update(items)
    section.setdefault(key, value)


def _lookup(data: Any, location: tuple[str, ...]) -> Any:
    for key in location:
        if not isinstance(data, dict):
            return None
        data = data.get(key, data.get(to_camel(key)))
    return data


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return [value] if isinstance(value, str) else []
