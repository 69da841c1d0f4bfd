"""The pods: an agent's StatefulSet (the wrapper's container and the backend's, their volumes, the wrapper's keys,
their limits) and the registry's Deployment."""

import hashlib
import json
import math
from typing import Any

from a2a_wrapper.config.runtimes import DockerRuntime, Runtime
from a2a_wrapper.deploy.objects import Component, labels, metadata, selector
from a2a_wrapper.deploy.options import KubernetesOptions
from a2a_wrapper.deploy.pod_config import (
    BACKEND_FOLDERS,
    BACKEND_MOUNT,
    CONFIG_FILE,
    CONFIG_MOUNT,
    DATA_MOUNT,
    POD_PORT,
    SOCKETS_MOUNT,
    PodConfig,
)
from a2a_wrapper.fleet import RegistrySettings
from a2a_wrapper.frontend.health import LIVE_PATH, READY_PATH

RUN_AS = 10001  # the image has no user of its own (it would run as root); its files are world-readable
REGISTRY_PORT = 8800
REGISTRY_SECRET = "registry-keys"
POSTGRES_URL_ENV = "A2A_WRAP_STATE__URL"  # the setting state.url, from the environment
# The backend's container with no runtime.cpus / runtime.memory: enough for one backend turn (Copilot CLI unpacks
# ~235 MB at first start).
DEFAULT_REQUESTS = {"cpu": "250m", "memory": "768Mi"}
DEFAULT_LIMITS = {"cpu": "2", "memory": "2Gi"}
# The wrapper's container: Python with its modules loaded holds ~120 MB; per-task copies (git) run there too.
WRAPPER_REQUESTS = {"cpu": "100m", "memory": "256Mi"}
WRAPPER_LIMITS = {"cpu": "1", "memory": "1Gi"}
_BINARY_UNITS = {"k": "Ki", "m": "Mi", "g": "Gi"}
SECURITY_NOTE = f"""\
# Two containers, each under the `restricted` Pod Security Standard: user {RUN_AS}, no root, a read-only root
# filesystem, no privilege escalation, every capability dropped, the runtime's default seccomp profile.
# `agent` runs the wrapper (`a2a-wrap serve`): the keys from the Secret in its environment, its state on the volume
# `data` at {DATA_MOUNT}, its config at {CONFIG_MOUNT}. `backend` runs `a2a-wrap sidecar`, which starts the backends
# the wrapper asks for (runtime.kind: sidecar): no variable from any Secret, no ports; it mounts only the wrapper's
# sockets ({SOCKETS_MOUNT}, an emptyDir, read-only there), the volume `backend` at {BACKEND_MOUNT} (the backend's
# own folders and the workspace, read-write in both) and a /tmp of its own. The containers share no process
# namespace: a tool cannot read the wrapper's environment, memory or files through /proc, and the volume `data`
# is not in its container. They share the pod's network: the backend reaches the wrapper's ports on 127.0.0.1
# (with the authentication any pod of the namespace needs) and leaves the pod as the NetworkPolicy below allows.
# Not bubblewrap inside: it needs user namespaces (refused by the default seccomp profile without CAP_SYS_ADMIN)
# and a fresh /proc (refused by a container's masked /proc).
"""


def agent_config_map(name: str, namespace: str, config: PodConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(f"{name}-config", namespace, "agent", labels(name, "agent")),
        "data": config.files,
    }


def agent_stateful_set(
    name: str, options: KubernetesOptions, config: PodConfig, runtime: Runtime, stop_grace: float
) -> dict[str, Any]:
    """One replica of two containers, the wrapper's and the backend's; each one's data on a PersistentVolumeClaim of
    its own, kept when the StatefulSet goes."""
    volumes = [
        {"name": "config", "configMap": {"name": f"{name}-config"}},
        {"name": "sockets", "emptyDir": {"sizeLimit": "64Mi"}},
        tmp_volume(),
        tmp_volume("backend-tmp"),
    ]
    containers = [wrapper_container(name, options, config), backend_container(options, runtime)]
    template = pod_template(name, "agent", containers, volumes, math.ceil(stop_grace) + 5)
    template["metadata"]["annotations"] = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(POD_PORT),
        "prometheus.io/path": "/metrics",
        # A changed config changes the template, so the pod restarts with it.
        "a2a-wrapper/config-sha256": hashlib.sha256(json.dumps(config.files, sort_keys=True).encode()).hexdigest(),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(name, options.namespace, "agent"),
        "spec": {
            "serviceName": name,
            "replicas": 1,
            "selector": {"matchLabels": selector(name, "agent")},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": template,
            "volumeClaimTemplates": [
                volume_claim(name, "data", options.state_storage),
                volume_claim(name, "backend", options.storage),
            ],
        },
    }


def wrapper_container(name: str, options: KubernetesOptions, config: PodConfig) -> dict[str, Any]:
    """`a2a-wrap serve`: the keys, the config, the state, the A2A port and its probes."""
    env = [{"name": "HOME", "value": "/tmp"}, *agent_env(name, config)]
    if options.postgres_secret is not None:
        env.append(postgres_env(options.postgres_secret))
    return {
        "name": "agent",
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["serve", "--config", f"{CONFIG_MOUNT}/{CONFIG_FILE}"],
        "ports": [{"name": "http", "containerPort": POD_PORT, "protocol": "TCP"}],
        "env": env,
        "resources": {"requests": dict(WRAPPER_REQUESTS), "limits": dict(WRAPPER_LIMITS)},
        **probes(liveness_delay=60),
        "securityContext": container_security(),
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": True},
            {"name": "data", "mountPath": DATA_MOUNT},
            {"name": "sockets", "mountPath": SOCKETS_MOUNT},
            {"name": "backend", "mountPath": BACKEND_MOUNT},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def backend_container(options: KubernetesOptions, runtime: Runtime) -> dict[str, Any]:
    """`a2a-wrap sidecar`: no Secret, no port, no state; the wrapper's sockets read-only, the backend's volume."""
    return {
        "name": "backend",
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        # As the container's PID 1 it reaps orphans; --reap-strays: a tool's leftover process ends with its backend.
        "args": ["sidecar", "--folders", BACKEND_FOLDERS, "--reap-strays"],
        "env": [{"name": "HOME", "value": "/tmp"}],
        "resources": resources(runtime),
        "securityContext": container_security(),
        "volumeMounts": [
            {"name": "sockets", "mountPath": SOCKETS_MOUNT, "readOnly": True},
            {"name": "backend", "mountPath": BACKEND_MOUNT},
            {"name": "backend-tmp", "mountPath": "/tmp"},
        ],
    }


def volume_claim(name: str, volume: str, storage: str) -> dict[str, Any]:
    return {
        "metadata": {"name": volume, "labels": labels(name, "agent")},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}},
    }


def agent_env(name: str, config: PodConfig) -> list[dict[str, Any]]:
    """Each variable the config names, from the agent's Secret `<name>-keys`: referenced here, never its value."""
    secret = f"{name}-keys"
    return [
        {"name": variable, "valueFrom": {"secretKeyRef": {"name": secret, "key": variable, "optional": optional}}}
        for variable, optional in config.variables.items()
    ]


def postgres_env(secret: str) -> dict[str, Any]:
    return {"name": POSTGRES_URL_ENV, "valueFrom": {"secretKeyRef": {"name": secret, "key": "url"}}}


def registry_deployment(
    options: KubernetesOptions, agent_urls: list[str], settings: RegistrySettings
) -> dict[str, Any]:
    """`a2a-wrap registry` listing the agents by their Services' URLs, as compose's registry lists its services;
    the console's operators sign in with keys from the Secret `registry-keys`."""
    args = ["registry", *(f"--agent={url}" for url in agent_urls)]
    args += ["--host=0.0.0.0", f"--port={REGISTRY_PORT}", f"--health-interval={settings.health_interval:g}"]
    args += [f"--operator={operator.name}:{operator.key_env}" for operator in settings.operators]
    keys = [
        {"name": key_env, "valueFrom": {"secretKeyRef": {"name": REGISTRY_SECRET, "key": key_env}}}
        for key_env in registry_keys(settings)
    ]
    container = {
        "name": "registry",
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "ports": [{"name": "http", "containerPort": REGISTRY_PORT, "protocol": "TCP"}],
        "env": [{"name": "HOME", "value": "/tmp"}, *keys],
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        **probes(liveness_delay=10, ready_path="/health", live_path="/health"),  # the registry's own, at once
        "securityContext": container_security(),
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata("registry", options.namespace, "registry"),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector("registry", "registry")},
            "template": pod_template("registry", "registry", [container], [tmp_volume()], 30),
        },
    }


def registry_keys(settings: RegistrySettings) -> list[str]:
    """The variables holding the operators' keys, each a key of the Secret `registry-keys`."""
    return [operator.key_env for operator in settings.operators]


def registry_service(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata("registry", namespace, "registry"),
        "spec": {
            "selector": selector("registry", "registry"),
            "ports": [{"name": "http", "port": REGISTRY_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def pod_template(
    name: str, component: Component, containers: list[dict[str, Any]], volumes: list[dict[str, Any]], grace: int
) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels(name, component)},
        "spec": {
            "automountServiceAccountToken": False,  # neither the agent nor the registry talks to the API server
            "enableServiceLinks": False,  # no *_SERVICE_HOST variables: the backend's environment stays its own
            "terminationGracePeriodSeconds": grace,
            "securityContext": pod_security(),
            "containers": containers,
            "volumes": volumes,
        },
    }


def pod_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS,
        "fsGroup": RUN_AS,  # the volumes are writable by both containers
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def tmp_volume(name: str = "tmp") -> dict[str, Any]:
    return {"name": name, "emptyDir": {"sizeLimit": "1Gi"}}


def probes(liveness_delay: int, ready_path: str = READY_PATH, live_path: str = LIVE_PATH) -> dict[str, Any]:
    """An agent is in service while /health/ready says so (the state database answers, the backend's process
    runs), and restarted only when /health/live has not answered for two minutes (a backend starts slowly: the
    agent serves once it has). Neither waits on a busy backend (frontend/health.py)."""
    ready = {"httpGet": {"path": ready_path, "port": "http"}, "timeoutSeconds": 5}
    live = {"httpGet": {"path": live_path, "port": "http"}, "timeoutSeconds": 5}
    return {
        "readinessProbe": {**ready, "initialDelaySeconds": 2, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {**live, "initialDelaySeconds": liveness_delay, "periodSeconds": 20, "failureThreshold": 6},
    }


def resources(runtime: Runtime) -> dict[str, Any]:
    """The backend's: runtime.cpus and runtime.memory (a docker runtime's) as requests and limits; else the
    defaults."""
    if not isinstance(runtime, DockerRuntime) or (runtime.cpus is None and runtime.memory is None):
        return {"requests": dict(DEFAULT_REQUESTS), "limits": dict(DEFAULT_LIMITS)}
    limits = {
        "cpu": f"{round(runtime.cpus * 1000)}m" if runtime.cpus is not None else DEFAULT_LIMITS["cpu"],
        "memory": memory_quantity(runtime.memory) if runtime.memory is not None else DEFAULT_LIMITS["memory"],
    }
    requests = {
        key: limits[key] if given else DEFAULT_REQUESTS[key]
        for key, given in (("cpu", runtime.cpus is not None), ("memory", runtime.memory is not None))
    }
    return {"requests": requests, "limits": limits}


def memory_quantity(memory: str) -> str:
    """Docker's `512m`, `2g`, `100k`, `1000b` as Kubernetes quantities: 512Mi, 2Gi, 100Ki, 1000."""
    unit = memory[-1].lower()
    if unit.isdigit():
        return memory
    return memory[:-1] if unit == "b" else memory[:-1] + _BINARY_UNITS[unit]
