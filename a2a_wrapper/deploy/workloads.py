"""The pods: an agent's StatefulSet (its config, its volume, its keys, its limits) and the registry's Deployment."""

import hashlib
import json
import math
from typing import Any

from a2a_wrapper.config.runtimes import DockerRuntime, Runtime
from a2a_wrapper.deploy.objects import Component, labels, metadata, selector
from a2a_wrapper.deploy.options import KubernetesOptions
from a2a_wrapper.deploy.pod_config import CONFIG_FILE, CONFIG_MOUNT, DATA_MOUNT, POD_PORT, PodConfig
from a2a_wrapper.fleet import RegistrySettings

RUN_AS = 10001  # the image has no user of its own (it would run as root); its files are world-readable
REGISTRY_PORT = 8800
REGISTRY_SECRET = "registry-keys"
POSTGRES_URL_ENV = "A2A_WRAP_STATE__URL"  # the setting state.url, from the environment
# With no runtime.cpus / runtime.memory: enough for one backend turn (Copilot CLI unpacks ~235 MB at first start).
DEFAULT_REQUESTS = {"cpu": "250m", "memory": "768Mi"}
DEFAULT_LIMITS = {"cpu": "2", "memory": "2Gi"}
_BINARY_UNITS = {"k": "Ki", "m": "Mi", "g": "Gi"}
SECURITY_NOTE = f"""\
# securityContext: user {RUN_AS}, no root, a read-only root filesystem (writable: /data, the volume, and /tmp),
# no privilege escalation, every capability dropped, the runtime's default seccomp profile: the `restricted` Pod
# Security Standard. The backend runs as a plain child process (runtime.kind: process): the default bubblewrap
# sandbox needs to create user namespaces (which the default seccomp profile refuses without CAP_SYS_ADMIN) and to
# mount a fresh /proc (which a container's masked /proc refuses), so it would need seccomp Unconfined and an
# unmasked /proc. The pod is the agent's boundary instead: its own filesystem, its volume, its NetworkPolicy.
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
    """One replica, its state and workspace on a PersistentVolumeClaim kept when the StatefulSet goes."""
    env = [{"name": "HOME", "value": "/tmp"}, *agent_env(name, config)]
    if options.postgres_secret is not None:
        env.append(postgres_env(options.postgres_secret))
    container = {
        "name": "agent",
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["serve", "--config", f"{CONFIG_MOUNT}/{CONFIG_FILE}"],
        "ports": [{"name": "http", "containerPort": POD_PORT, "protocol": "TCP"}],
        "env": env,
        "resources": resources(runtime),
        **probes(liveness_delay=60),
        "securityContext": container_security(),
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": True},
            {"name": "data", "mountPath": DATA_MOUNT},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    volumes = [{"name": "config", "configMap": {"name": f"{name}-config"}}, tmp_volume()]
    template = pod_template(name, "agent", container, volumes, math.ceil(stop_grace) + 5)
    template["metadata"]["annotations"] = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(POD_PORT),
        "prometheus.io/path": "/metrics",
        # A changed config changes the template, so the pod restarts with it.
        "a2a-wrapper/config-sha256": hashlib.sha256(json.dumps(config.files, sort_keys=True).encode()).hexdigest(),
    }
    claim = {
        "metadata": {"name": "data", "labels": labels(name, "agent")},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": options.storage}}},
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
            "volumeClaimTemplates": [claim],
        },
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
        **probes(liveness_delay=10),
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
            "template": pod_template("registry", "registry", container, [tmp_volume()], 30),
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
    name: str, component: Component, container: dict[str, Any], volumes: list[dict[str, Any]], grace: int
) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels(name, component)},
        "spec": {
            "automountServiceAccountToken": False,  # neither the agent nor the registry talks to the API server
            "enableServiceLinks": False,  # no *_SERVICE_HOST variables: the backend's environment stays its own
            "terminationGracePeriodSeconds": grace,
            "securityContext": pod_security(),
            "containers": [container],
            "volumes": volumes,
        },
    }


def pod_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS,
        "fsGroup": RUN_AS,  # the volume is writable by the agent
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


def tmp_volume() -> dict[str, Any]:
    return {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}


def probes(liveness_delay: int) -> dict[str, Any]:
    """Ready when /health says so; restarted only after a minute and more of failures (a backend starts slowly,
    and /health answers 503 while it is down)."""
    check = {"httpGet": {"path": "/health", "port": "http"}, "timeoutSeconds": 5}
    return {
        "readinessProbe": {**check, "initialDelaySeconds": 2, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {**check, "initialDelaySeconds": liveness_delay, "periodSeconds": 20, "failureThreshold": 6},
    }


def resources(runtime: Runtime) -> dict[str, Any]:
    """runtime.cpus and runtime.memory (a docker runtime's) as requests and limits; else the defaults."""
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
