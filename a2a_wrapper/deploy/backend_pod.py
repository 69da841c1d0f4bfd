"""The backend in a pod of its own (`deploy kubernetes --backend-pod`): its Deployment, the two gates' Services, and
the NetworkPolicy that leaves it no network but its channels to the wrapper's pod (sandbox/channel.py).

A pod's containers share one network: beside the wrapper, a tool that ignores the proxy reaches the wrapper's
ports, the namespace's services and whatever the agent's policy lets out. In a pod of its own, the backend's
network is what its NetworkPolicy allows: from the wrapper's pod to its gate (8791: the sidecar, a port it
serves), to the wrapper's gate (8790: the egress proxy, the tool hook) — nothing else, not even DNS (the wrapper's
gate is found through the Service's environment variable, so the pod needs no resolver). Both gates want the
token of the Secret `<name>-channel`, mounted in the wrapper's container and the backend pod's `channel`
container only; the container the tools run in never holds it. A NetworkPolicy binds only where the cluster's
network plugin enforces it (Calico, Cilium, …; not kindnet, not flannel alone): the gates' token still stands
where it does not, but a tool could then dial the cluster's other services and the outside.
"""

from typing import Any

from a2a_wrapper.config.runtimes import Runtime
from a2a_wrapper.deploy.objects import Component, labels, metadata, selector
from a2a_wrapper.deploy.options import KubernetesOptions
from a2a_wrapper.deploy.pod_config import BACKEND_FOLDERS, BACKEND_MOUNT, SHOWN, SOCKETS_MOUNT, WORKSPACE
from a2a_wrapper.deploy.workloads import backend_container, container_security, pod_template, tmp_volume

WRAPPER_GATE_PORT = 8790  # the wrapper's pod: the egress proxy and the tool hook, for the backend's pod
BACKEND_GATE_PORT = 8791  # the backend's pod: the sidecar and the ports the backend serves, for the wrapper's pod
TOKEN_MOUNT = "/run/a2a-channel"
TOKEN_FILE = f"{TOKEN_MOUNT}/token"
TOKEN_VOLUME = "channel-token"
_HOSTNAME = "kubernetes.io/hostname"
BACKEND_POD_NOTE = f"""\
# Every container runs under the `restricted` Pod Security Standard: a non-root user, no root, a read-only root
# filesystem, no privilege escalation, every capability dropped, the runtime's default seccomp profile.
# The StatefulSet's pod runs the wrapper alone (`agent`: the keys from the Secret, its state on `data`, its config).
# The backend runs in a pod of its own (Deployment <name>-backend): `backend` runs `a2a-wrap sidecar`, where the
# tools run (no Secret, no port); `channel` holds the channel's token and serves the channels. Its network is its
# NetworkPolicy's: from the wrapper's pod to its gate on {BACKEND_GATE_PORT}, to the wrapper's gate on
# {WRAPPER_GATE_PORT}, nothing else (no DNS, no other service, no outside). Every channel between the pods (the
# egress proxy, the tool hook, the sidecar, the port OpenCode serves) is TCP that wants the token of the Secret
# <name>-channel, mounted in the containers `agent` and `channel` only. The agent's NetworkPolicy: ingress on 8000
# from the namespace and on {WRAPPER_GATE_PORT} from the backend's pod; egress to DNS, the endpoints the config
# names, Postgres when given, the backend's gate. The cluster must enforce NetworkPolicy (a CNI such as Calico or
# Cilium): without it the token still guards both gates, but a tool can reach every other address. The pods share
# the volume `backend` (ReadWriteOnce: the backend's pod is placed on the wrapper's node); what the wrapper makes
# for the backend to read is under {SHOWN}, read-only in the backend's pod.
"""
SHARED_POD_SAYS = (
    "the backend's container shares the pod's network: a tool that ignores the egress proxy reaches what the "
    "NetworkPolicy lets the pod reach, the wrapper's own ports on 127.0.0.1 included. --backend-pod puts it in a "
    "pod of its own, whose network is its channels to the wrapper (the cluster must enforce NetworkPolicy)"
)
BACKEND_POD_SAYS = (
    f"the backend runs in a pod of its own ({{name}}-backend) that reaches only the wrapper's gate on "
    f"{WRAPPER_GATE_PORT}: this holds only where the cluster's network plugin enforces NetworkPolicy (Calico, "
    "Cilium, …; not kindnet or flannel alone). Create the Secret {name}-channel with a `token` of 32 characters "
    "or more (e.g. openssl rand -hex 32)"
)


def apart_runtime(name: str, namespace: str) -> dict[str, Any]:
    """The agent's `runtime` section: the sidecar in the backend's pod, reached through the channels."""
    return {
        "kind": "sidecar",
        "sockets": SOCKETS_MOUNT,
        "folders": BACKEND_FOLDERS,
        "network": "apart",
        "gate": f"0.0.0.0:{WRAPPER_GATE_PORT}",
        "backend_gate": f"{backend_name(name)}.{namespace}.svc:{BACKEND_GATE_PORT}",
        "token_file": TOKEN_FILE,
        "shown": SHOWN,
    }


def wrapper_alone(stateful_set: dict[str, Any], name: str) -> dict[str, Any]:
    """The agent's StatefulSet with the wrapper's container alone: the backend's container goes to its own pod; the
    wrapper's gets the channel's token and serves its gate."""
    spec = stateful_set["spec"]["template"]["spec"]
    spec["containers"] = [container for container in spec["containers"] if container["name"] != "backend"]
    spec["volumes"] = [volume for volume in spec["volumes"] if volume["name"] != "backend-tmp"]
    spec["volumes"].append(token_volume(name))
    (agent,) = spec["containers"]
    agent["ports"].append({"name": "channel", "containerPort": WRAPPER_GATE_PORT, "protocol": "TCP"})
    agent["volumeMounts"].append(dict(TOKEN_VOLUME_MOUNT))
    return stateful_set


def with_channels(policy: dict[str, Any], name: str) -> dict[str, Any]:
    """The agent's NetworkPolicy with its channels to and from the backend's pod."""
    ingress, egress = wrapper_channel_rules(name)
    policy["spec"]["ingress"].append(ingress)
    policy["spec"]["egress"].append(egress)
    return policy


def channel_secret(name: str) -> str:
    return f"{name}-channel"


def gate_service(name: str) -> str:
    """The wrapper's gate's Service; the backend pod reads its address from `<NAME>_SERVICE_HOST`."""
    return f"{name}-gate"


def backend_name(name: str) -> str:
    return f"{name}-backend"


def backend_objects(name: str, options: KubernetesOptions, runtime: Runtime) -> list[dict[str, Any]]:
    return [
        _service(gate_service(name), options.namespace, name, "agent", WRAPPER_GATE_PORT),
        _service(backend_name(name), options.namespace, name, "backend", BACKEND_GATE_PORT),
        backend_deployment(name, options, runtime),
        backend_network_policy(name, options.namespace),
    ]


def backend_deployment(name: str, options: KubernetesOptions, runtime: Runtime) -> dict[str, Any]:
    """One pod, two containers: `backend` runs the sidecar (the tools run there: no token, no port of its own);
    `channel` holds the token and serves both ends of the channels. Placed on the wrapper's node: they share its
    ReadWriteOnce volume."""
    volumes = [
        {"name": "backend", "persistentVolumeClaim": {"claimName": f"backend-{name}-0"}},  # the StatefulSet's
        {"name": "sockets", "emptyDir": {"sizeLimit": "16Mi"}},
        token_volume(name),
        tmp_volume("backend-tmp"),
    ]
    containers = [_sidecar(options, runtime), _channel(name, options)]
    template = pod_template(name, "backend", containers, volumes, 30)
    # The Service variables name the wrapper's gate without DNS, which this pod is not allowed.
    template["spec"]["enableServiceLinks"] = True
    agent_pod = {"labelSelector": {"matchLabels": selector(name, "agent")}, "topologyKey": _HOSTNAME}
    template["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [agent_pod]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(backend_name(name), options.namespace, "backend", labels(name, "backend")),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},  # one sidecar per agent: never two at once
            "selector": {"matchLabels": selector(name, "backend")},
            "template": template,
        },
    }


def _sidecar(options: KubernetesOptions, runtime: Runtime) -> dict[str, Any]:
    """The backend's own folders and the workspace read-write; what the wrapper made for it (SHOWN) and the
    wrapper's sockets (the channel's forwards) read-only. No Secret, no port."""
    return {
        **backend_container(options, runtime),
        "volumeMounts": [
            {"name": "backend", "mountPath": BACKEND_FOLDERS, "subPath": "backend"},
            {"name": "backend", "mountPath": WORKSPACE, "subPath": "workspace"},
            {
                "name": "backend",
                "mountPath": SHOWN,
                "subPath": SHOWN.removeprefix(f"{BACKEND_MOUNT}/"),
                "readOnly": True,
            },
            {"name": "sockets", "mountPath": SOCKETS_MOUNT, "readOnly": True},
            {"name": "backend-tmp", "mountPath": "/tmp"},
        ],
    }


def _channel(name: str, options: KubernetesOptions) -> dict[str, Any]:
    host = f"$({gate_service(name).upper().replace('-', '_')}_SERVICE_HOST)"
    return {
        "name": "channel",
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        "args": [
            "channel",
            "--token-file",
            TOKEN_FILE,
            "--listen",
            f"0.0.0.0:{BACKEND_GATE_PORT}",
            "--wrapper",
            f"{host}:{WRAPPER_GATE_PORT}",
            "--folders",
            BACKEND_FOLDERS,
            "--sockets",
            SOCKETS_MOUNT,
        ],
        "ports": [{"name": "channel", "containerPort": BACKEND_GATE_PORT, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        "securityContext": container_security(),
        "volumeMounts": [
            {"name": "backend", "mountPath": BACKEND_FOLDERS, "subPath": "backend", "readOnly": True},
            {"name": "sockets", "mountPath": SOCKETS_MOUNT},
            dict(TOKEN_VOLUME_MOUNT),
        ],
    }


def token_volume(name: str) -> dict[str, Any]:
    """The Secret `<name>-channel` (key `token`), for the wrapper's container and the `channel` container."""
    return {"name": TOKEN_VOLUME, "secret": {"secretName": channel_secret(name), "defaultMode": 0o440}}


TOKEN_VOLUME_MOUNT = {"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT, "readOnly": True}


def _service(service: str, namespace: str, name: str, component: Component, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(service, namespace, component, labels(name, component)),
        "spec": {
            "selector": selector(name, component),
            "ports": [{"name": "channel", "port": port, "targetPort": "channel"}],
        },
    }


def backend_network_policy(name: str, namespace: str) -> dict[str, Any]:
    """Ingress from the wrapper's pod to the backend's gate; egress to the wrapper's gate; nothing else."""
    wrapper = [{"podSelector": {"matchLabels": selector(name, "agent")}}]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(f"{backend_name(name)}-network", namespace, "backend", labels(name, "backend")),
        "spec": {
            "podSelector": {"matchLabels": selector(name, "backend")},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": wrapper, "ports": [{"protocol": "TCP", "port": BACKEND_GATE_PORT}]}],
            "egress": [{"to": wrapper, "ports": [{"protocol": "TCP", "port": WRAPPER_GATE_PORT}]}],
        },
    }


def wrapper_channel_rules(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The wrapper's pod's (ingress, egress) rules for its channels: from the backend's pod to the wrapper's gate,
    to the backend's gate."""
    backend = [{"podSelector": {"matchLabels": selector(name, "backend")}}]
    ingress = {"from": backend, "ports": [{"protocol": "TCP", "port": WRAPPER_GATE_PORT}]}
    egress = {"to": backend, "ports": [{"protocol": "TCP", "port": BACKEND_GATE_PORT}]}
    return ingress, egress
