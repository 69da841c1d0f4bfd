"""An agent's config as its pod reads it: the agent's own file, rewritten for the pod's paths, port and runtime.

The file is taken as written (`${VAR}` references kept), never as loaded: a loaded config holds the values its
variables had here, and those may be keys. In the pod, each variable is read from the agent's Secret at start.
The runtime is always `sidecar`: the backend runs in the pod's second container, apart from the wrapper's.
"""

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_camel, to_snake

from a2a_wrapper.config.files import VARIABLE
from a2a_wrapper.config.node import is_node_config, translate_node_config
from a2a_wrapper.config.secrets import secret_fields
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.config.source import read_config_file
from a2a_wrapper.deploy.objects import dump_yaml
from a2a_wrapper.errors import ConfigError, describe_invalid
from a2a_wrapper.fleet import AgentSpec

POD_PORT = 8000
DATA_MOUNT = "/data"  # the wrapper's PersistentVolumeClaim (its state), in its container only
STATE_DIR = f"{DATA_MOUNT}/state"
CONFIG_MOUNT = "/config"  # the ConfigMap, read-only
CONFIG_FILE = "config.yaml"
OPERATOR_RULES_FILE = "operator-rules.yaml"
# What the two containers share, each at the same path in both (the sidecar runtime's defaults):
SOCKETS_MOUNT = "/run/a2a-wrapper"  # an emptyDir: the wrapper's sockets, read-only in the backend's container
BACKEND_MOUNT = "/srv/a2a"  # the backend's PersistentVolumeClaim: its own folders and the workspace
BACKEND_FOLDERS = f"{BACKEND_MOUNT}/backend"
WORKSPACE = f"{BACKEND_MOUNT}/workspace"
# The backend in a pod of its own: what the wrapper made for it to read (its config, Copilot's package), on the
# shared volume, read-only in the backend's pod (its sockets folder there holds the channel's forwards only).
SHOWN = f"{BACKEND_MOUNT}/shown"
# What a runtime said that still holds in a pod; cpus and memory become the backend container's resources.
_RUNTIME_KEPT = ("hosts", "connect_timeout")
_RUNTIME_AS_RESOURCES = ("cpus", "memory")
_RUNTIME_REASONS = {
    "process": "a plain child would share the wrapper's container: its environment (the keys) and its files",
    "sandbox": "bubblewrap needs user namespaces and a fresh /proc, which a restricted pod refuses",
    "docker": "a pod has no container engine",
}


@dataclass
class PodConfig:
    """The ConfigMap's files, the variables the pod reads from the agent's Secret, and what changed, in sentences."""

    files: dict[str, str]
    variables: dict[str, bool] = field(default_factory=dict)  # name -> optional (unset leaves a default or nothing)
    notes: list[str] = field(default_factory=list)


def pod_config(agent: AgentSpec, advertise_url: str, secret: str, runtime: dict[str, Any] | None = None) -> PodConfig:
    """`agent`'s config for its pod, whose `runtime` section is `runtime` (the backend in the pod's second
    container when None); a literal key (which would land in the ConfigMap) is refused naming it."""
    raw = read_config_file(agent.config)
    data = translate_node_config(raw) if is_node_config(raw) else raw
    refuse_literal_keys(agent, data, secret)
    refuse_unfit_for_sidecar(agent)
    config = PodConfig(files={})
    _rewrite_server(agent, data, advertise_url, config)
    _rewrite_backend(agent, data)
    _rewrite_runtime(agent, data, config, runtime or _pod_runtime())
    _set(data, "state_dir", STATE_DIR)
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


def refuse_unfit_for_sidecar(agent: AgentSpec) -> None:
    """The agent's settings as its pod runs them, checked by the config model itself: what a sidecar cannot run
    (several callers, an attached backend) is refused here with the model's sentence, not at the pod's start."""
    pod = {**agent.settings.model_dump(by_alias=False), "runtime": _pod_runtime(), "state_dir": STATE_DIR}
    try:
        AgentSettings.model_validate(pod)
    except ValidationError as exc:
        reasons = "; ".join(describe_invalid(error) for error in exc.errors())
        raise ConfigError(
            f"{agent.config}: the agent {agent.name} cannot run in a pod, where its backend runs in a container of "
            f"its own beside the wrapper's (runtime.kind: sidecar): {reasons}"
        ) from exc


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


def _rewrite_server(agent: AgentSpec, data: dict[str, Any], advertise_url: str, config: PodConfig) -> None:
    """server: the pod's port and URL. gRPC (on in the examples and the demo) is left out, said in a note: the
    manifests serve A2A over HTTP only, and the pod's card then lists only the bindings the pod serves."""
    server = _section(data, "server")
    if agent.settings.server.grpc_port is not None:
        for spelling in ("grpc_port", to_camel("grpc_port")):
            server.pop(spelling, None)
        config.notes.append(
            f"server.grpc_port {agent.settings.server.grpc_port} is left out: the manifests serve A2A over HTTP "
            f"(JSON-RPC and REST) on port {POD_PORT} only, and the pod's card lists those"
        )
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
    _set(backend, "workdir", WORKSPACE)
    if agent.settings.backend.system_prompt_file is not None:  # the file's text, as the agent would read it
        for spelling in ("system_prompt_file", to_camel("system_prompt_file")):
            backend.pop(spelling, None)
        _set(backend, "system_prompt", agent.settings.backend.system_prompt)


def _rewrite_runtime(agent: AgentSpec, data: dict[str, Any], config: PodConfig, pod: dict[str, Any]) -> None:
    """runtime: `pod`, keeping the hosts and connect_timeout the file wrote; the rest said in notes."""
    runtime = agent.settings.runtime
    written = _lookup(data, ("runtime",))
    pod = dict(pod)
    for key in _RUNTIME_KEPT:
        if (value := _lookup(written, (key,))) is not None:
            pod[key] = value
    _set(data, "runtime", pod)
    if runtime.kind != "sidecar":
        config.notes.append(
            f"runtime.kind {runtime.kind} becomes sidecar: {_RUNTIME_REASONS[runtime.kind]}; the backend runs in a "
            "container `backend`, apart from the wrapper's"
        )
    said = {to_snake(key) for key in written} if isinstance(written, dict) else set()
    if resized := [key for key in _RUNTIME_AS_RESOURCES if key in said]:
        config.notes.append(f"runtime.{' and runtime.'.join(resized)} become the container `backend`'s resources")
    if left_out := sorted(said - {"kind", *_RUNTIME_KEPT, *resized}):
        config.notes.append(
            f"runtime.{', runtime.'.join(left_out)}: not used in a pod, whose containers share {SOCKETS_MOUNT} and "
            f"{BACKEND_MOUNT} only"
        )


def _pod_runtime() -> dict[str, Any]:
    # A pod's containers share one network: the sidecar refuses a start that says otherwise.
    return {"kind": "sidecar", "sockets": SOCKETS_MOUNT, "folders": BACKEND_FOLDERS, "network": "shared"}


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
