"""`a2a-wrap deploy kubernetes --backend-pod`: each agent's backend in a pod of its own. Every object validated
against the Kubernetes 1.37 OpenAPI schemas (strict), then what the boundary rests on asserted on the objects: the
backend's pod holds no key and reaches only the wrapper's gate, the token is mounted where the channels are served
and nowhere else, the wrapper's config names the channels. tests/test_pod_channels.py runs this shape for real.
"""

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from a2a_wrapper.config.runtimes import SidecarRuntime
from a2a_wrapper.deploy.backend_pod import BACKEND_GATE_PORT, TOKEN_MOUNT, WRAPPER_GATE_PORT
from a2a_wrapper.deploy.manifests import load_deployment, render_kubernetes, summary
from a2a_wrapper.deploy.options import KubernetesOptions
from a2a_wrapper.deploy.pod_config import SHOWN, SOCKETS_MOUNT
from a2a_wrapper.deploy.workloads import container_security
from tests.test_deploy_kubernetes import EXAMPLES, KUBERNETES, REPO, objects, render

AGENT = "agents/code-review/config.yaml"


def by_name(files: dict[str, list[dict[str, Any]]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [doc for doc in objects(files, kind) if doc["metadata"]["name"] == name]
    return found


def containers(workload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {container["name"]: container for container in workload["spec"]["template"]["spec"]["containers"]}


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_object_of_an_example_with_backend_pods_is_valid_kubernetes(example: str) -> None:
    files = render(example, postgres_secret="agents-state", backend_pod=True)
    for docs in files.values():
        for doc in docs:
            if doc["kind"] != "Kustomization":
                kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    agents = objects(files, "StatefulSet")
    backends = [doc for doc in objects(files, "Deployment") if doc["metadata"]["name"].endswith("-backend")]
    assert len(backends) == len(agents) >= 1
    for stateful_set in agents:
        assert list(containers(stateful_set)) == ["agent"], "the backend is not in the wrapper's pod"


def test_the_backends_pod_reaches_only_the_wrappers_gate_and_is_reached_only_from_the_wrappers_pod() -> None:
    files = render(AGENT, backend_pod=True)
    policy = by_name(files, "NetworkPolicy", "code-review-backend-network")
    wrapper = [{"podSelector": {"matchLabels": containers_selector(files, "StatefulSet", "code-review")}}]
    backend_pods = by_name(files, "Deployment", "code-review-backend")["spec"]["selector"]["matchLabels"]
    assert policy["spec"] == {
        "podSelector": {"matchLabels": backend_pods},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": wrapper, "ports": [{"protocol": "TCP", "port": BACKEND_GATE_PORT}]}],
        "egress": [{"to": wrapper, "ports": [{"protocol": "TCP", "port": WRAPPER_GATE_PORT}]}],
    }  # no DNS, no other pod, no address block
    agent_policy = by_name(files, "NetworkPolicy", "code-review-network")["spec"]
    from_backend = {"from": [{"podSelector": {"matchLabels": backend_pods}}], "ports": [policy_port(WRAPPER_GATE_PORT)]}
    to_backend = {"to": [{"podSelector": {"matchLabels": backend_pods}}], "ports": [policy_port(BACKEND_GATE_PORT)]}
    assert from_backend in agent_policy["ingress"] and to_backend in agent_policy["egress"]


def containers_selector(files: dict[str, list[dict[str, Any]]], kind: str, name: str) -> dict[str, str]:
    return dict(by_name(files, kind, name)["spec"]["selector"]["matchLabels"])


def policy_port(port: int) -> dict[str, Any]:
    return {"protocol": "TCP", "port": port}


def test_the_token_is_mounted_where_the_channels_are_served_and_the_tools_container_holds_nothing() -> None:
    files = render(AGENT, backend_pod=True)
    backend_pod = by_name(files, "Deployment", "code-review-backend")
    pod = backend_pod["spec"]["template"]["spec"]
    sidecar, channel = containers(backend_pod)["backend"], containers(backend_pod)["channel"]
    secret_volumes = {volume["name"] for volume in pod["volumes"] if "secret" in volume}
    assert [volume["secret"]["secretName"] for volume in pod["volumes"] if "secret" in volume] == [
        "code-review-channel"
    ]
    assert not {mount["name"] for mount in sidecar["volumeMounts"]} & secret_volumes
    assert not [item for item in sidecar["env"] if "valueFrom" in item] and "ports" not in sidecar
    assert {mount["mountPath"]: mount.get("readOnly", False) for mount in sidecar["volumeMounts"]}[SHOWN] is True
    assert {mount["mountPath"]: mount.get("readOnly", False) for mount in sidecar["volumeMounts"]}[SOCKETS_MOUNT]
    assert {"name": "channel-token", "mountPath": TOKEN_MOUNT, "readOnly": True} in channel["volumeMounts"]
    assert "$(CODE_REVIEW_GATE_SERVICE_HOST):8790" in channel["args"], "the wrapper's gate found without DNS"
    assert pod["enableServiceLinks"] is True and pod["automountServiceAccountToken"] is False
    assert pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == (
        "kubernetes.io/hostname"
    )  # the ReadWriteOnce volume `backend` is the StatefulSet's, on the wrapper's node
    for container in [sidecar, channel, *containers(by_name(files, "StatefulSet", "code-review")).values()]:
        assert container["securityContext"] == container_security(), container["name"]
    (agent,) = containers(by_name(files, "StatefulSet", "code-review")).values()
    assert {"name": "channel-token", "mountPath": TOKEN_MOUNT, "readOnly": True} in agent["volumeMounts"]
    assert {"name": "channel", "containerPort": WRAPPER_GATE_PORT, "protocol": "TCP"} in agent["ports"]


def test_the_wrappers_config_names_the_channels_and_loads() -> None:
    files = render(AGENT, backend_pod=True)
    config = yaml.safe_load(by_name(files, "ConfigMap", "code-review-config")["data"]["config.yaml"])
    runtime = SidecarRuntime(**config["runtime"])
    assert runtime.network == "apart" and runtime.shown == Path(SHOWN)
    assert runtime.backend_gate == f"code-review-backend.a2a-fleet.svc:{BACKEND_GATE_PORT}"
    assert runtime.token_file == Path(TOKEN_MOUNT) / "token"


def test_the_render_says_what_the_cluster_must_provide(tmp_path: Path) -> None:
    fleet = load_deployment([REPO / AGENT])
    apart = summary(render_kubernetes(fleet, KubernetesOptions(backend_pod=True)), tmp_path, KubernetesOptions())
    assert "enforces NetworkPolicy" in apart and "code-review-channel: token" in apart
    shared = summary(render_kubernetes(fleet, KubernetesOptions()), tmp_path, KubernetesOptions())
    assert "shares the pod's network" in shared and "--backend-pod" in shared
