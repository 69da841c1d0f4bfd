"""`a2a-wrap deploy kubernetes`: the repo's example configs rendered, every object validated against the
Kubernetes 1.37 OpenAPI schemas (strict: no field Kubernetes does not know), what a user relies on asserted.

There is no cluster here: `kubectl kustomize` builds the folder for real; `kubectl apply --dry-run=client` needs an
API server to map kinds, and skips, saying so, when none answers.
"""

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from a2a_wrapper.config.files import VARIABLE, load_config
from a2a_wrapper.config.runtimes import SidecarRuntime
from a2a_wrapper.deploy.manifests import MARKER, load_deployment, render_kubernetes, write_rendering
from a2a_wrapper.deploy.options import KubernetesOptions
from a2a_wrapper.deploy.workloads import memory_quantity
from a2a_wrapper.errors import ConfigError, WrapperError

REPO = Path(__file__).parent.parent
KUBERNETES = "1.37.0"
EXAMPLES = [
    "agents/code-review/config.yaml",
    "agents/acp-reviewer/config.yaml",
    "configs/fleet.yaml",
    "compose/agents/code-review/config.yaml",
    "compose/agents/acp-coder/config.yaml",
    "agents/copilot-coder/config.yaml",
    "compose/agents/copilot-coder/config.yaml",
]
PROVIDER_KEY = "sk-deploy-test-provider-key-5f0c"
CALLER_KEY = "deploy-test-caller-key-91ab"


def render(*paths: Path | str, **options: Any) -> dict[str, list[dict[str, Any]]]:
    """Every file's documents, by file name."""
    rendering = render_kubernetes(load_deployment([REPO / path for path in paths]), KubernetesOptions(**options))
    return {name: list(yaml.safe_load_all(text)) for name, text in rendering.files.items()}


def objects(files: dict[str, list[dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [doc for docs in files.values() for doc in docs if doc["kind"] == kind]


def write_config(folder: Path, name: str, **sections: Any) -> Path:
    path = folder / name / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump({"card": {"name": name}, **sections}))
    return path


@pytest.fixture
def keyed_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Copilot agent whose provider key and caller key are set in this environment, as a user rendering would."""
    monkeypatch.setenv("DEPLOY_PROVIDER_KEY", PROVIDER_KEY)
    monkeypatch.setenv("DEPLOY_CALLER_KEY", CALLER_KEY)
    backend = {
        "kind": "copilot",
        "model": "gpt-test",
        "provider": {
            "type": "openai",
            "base_url": "https://models.example.com/v1",
            "api_key": "${DEPLOY_PROVIDER_KEY}",
        },
        "env": {"EXTRA_TOKEN": "${DEPLOY_PROVIDER_KEY}"},
    }
    auth = {"callers": [{"name": "ci", "key_env": "DEPLOY_CALLER_KEY"}]}
    return write_config(tmp_path, "keyed", backend=backend, auth=auth)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_object_of_an_example_is_valid_kubernetes(example: str) -> None:
    files = render(example, postgres_secret="agents-state")
    kinds = {doc["kind"] for docs in files.values() for doc in docs}
    assert kinds == {
        "Namespace", "ConfigMap", "Service", "StatefulSet", "NetworkPolicy", "Deployment", "Kustomization"
    }  # fmt: skip
    for docs in files.values():
        for doc in docs:
            if doc["kind"] != "Kustomization":  # kustomize's, not the API server's: built by kubectl below
                kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_a_literal_key_is_refused_naming_it(tmp_path: Path) -> None:
    provider = {"type": "openai", "base_url": "https://models.example.com/v1", "api_key": "sk-literal-1234"}
    literal = write_config(tmp_path, "literal", backend={"kind": "copilot", "model": "gpt-test", "provider": provider})
    with pytest.raises(ConfigError) as refused:
        render(literal)
    assert "backend.provider.api_key: the config holds a literal value" in str(refused.value)
    assert "write it as ${VAR}" in str(refused.value)
    assert "literal-keys" in str(refused.value)
    assert "sk-literal-1234" not in str(refused.value)


def test_no_key_value_is_written_only_secret_references(keyed_agent: Path) -> None:
    rendering = render_kubernetes(load_deployment([keyed_agent]), KubernetesOptions())
    for name, text in rendering.files.items():
        assert PROVIDER_KEY not in text, name
        assert CALLER_KEY not in text, name
    files = {name: list(yaml.safe_load_all(text)) for name, text in rendering.files.items()}
    for doc in (doc for docs in files.values() for doc in docs if doc["kind"] != "Kustomization"):
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    (stateful_set,) = objects(files, "StatefulSet")
    env = {item["name"]: item.get("valueFrom", {}).get("secretKeyRef") for item in container(stateful_set)["env"]}
    assert env["DEPLOY_PROVIDER_KEY"] == {"name": "keyed-keys", "key": "DEPLOY_PROVIDER_KEY", "optional": False}
    assert env["DEPLOY_CALLER_KEY"] == {"name": "keyed-keys", "key": "DEPLOY_CALLER_KEY", "optional": False}
    assert env["A2A_WRAP_CONSOLE_KEY"]["optional"] is True
    assert rendering.secrets["keyed-keys"] == {
        "A2A_WRAP_CONSOLE_KEY": True, "DEPLOY_CALLER_KEY": False, "DEPLOY_PROVIDER_KEY": False
    }  # fmt: skip
    (config_map,) = objects(files, "ConfigMap")
    assert "api_key: ${DEPLOY_PROVIDER_KEY}" in config_map["data"]["config.yaml"]


def test_the_pod_config_points_at_the_volume_and_the_service() -> None:
    files = render("agents/code-review/config.yaml", namespace="agents")
    (config_map,) = objects(files, "ConfigMap")
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    assert config["server"] == {"host": "0.0.0.0", "port": 8000, "advertise_url": "http://code-review.agents.svc:8000"}
    assert config["state_dir"] == "/data/state"
    assert config["backend"]["workdir"] == "/srv/a2a/workspace"
    assert "system_prompt_file" not in config["backend"]  # the file's text, inlined
    assert config["backend"]["system_prompt"] == (REPO / "agents/code-review/instructions.md").read_text()
    runtime = {"kind": "sidecar", "sockets": "/run/a2a-wrapper", "folders": "/srv/a2a/backend", "network": "shared"}
    assert config["runtime"] == runtime  # a pod's containers share one network
    assert config["backend"]["provider"]["base_url"] == "${A2A_OFFLINE_MODEL_URL:-http://127.0.0.1:8765/v1}"


def test_grpc_is_left_out_of_the_pod_and_said_in_a_note(tmp_path: Path) -> None:
    config = write_config(tmp_path, "both", server={"port": 9100, "grpc_port": 9200})
    rendering = render_kubernetes(load_deployment([config]), KubernetesOptions())
    (config_map,) = (
        doc for doc in yaml.safe_load_all(rendering.files["agent-both.yaml"]) if doc["kind"] == "ConfigMap"
    )
    assert "grpc_port" not in yaml.safe_load(config_map["data"]["config.yaml"])["server"]
    note = "server.grpc_port 9200 is left out: the manifests serve A2A over HTTP (JSON-RPC and REST) on port 8000 only"
    assert any(line.startswith(f"both: {note}") for line in rendering.notes), rendering.notes


def containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    return list(workload["spec"]["template"]["spec"]["containers"])


def container(workload: dict[str, Any], name: str = "agent") -> dict[str, Any]:
    (found,) = (each for each in containers(workload) if each["name"] == name)
    return found


def mounts(container: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Each mount's path -> (volume, read-only)."""
    return {mount["mountPath"]: (mount["name"], mount.get("readOnly", False)) for mount in container["volumeMounts"]}


def test_the_agent_pod_is_probed_scraped_restricted_and_on_two_volumes() -> None:
    files = render(
        "agents/code-review/config.yaml", storage="3Gi", state_storage="500Mi", image="registry.example.com/a2a:1"
    )
    (stateful_set,) = objects(files, "StatefulSet")
    pod = stateful_set["spec"]["template"]
    agent, backend = containers(stateful_set)
    assert stateful_set["spec"]["replicas"] == 1
    assert (agent["name"], backend["name"]) == ("agent", "backend")
    assert agent["image"] == backend["image"] == "registry.example.com/a2a:1"
    assert agent["args"] == ["serve", "--config", "/config/config.yaml"]
    assert backend["args"] == ["sidecar", "--folders", "/srv/a2a/backend", "--reap-strays"]
    assert agent["readinessProbe"]["httpGet"] == {"path": "/health/ready", "port": "http"}
    assert agent["livenessProbe"]["httpGet"] == {"path": "/health/live", "port": "http"}
    assert agent["livenessProbe"]["initialDelaySeconds"] >= 60
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == "8000"
    assert pod["metadata"]["annotations"]["prometheus.io/path"] == "/metrics"
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["securityContext"]["fsGroup"] == pod["spec"]["securityContext"]["runAsUser"]
    assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert "shareProcessNamespace" not in pod["spec"]
    for each in (agent, backend):
        assert each["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }
    claims = {claim["metadata"]["name"]: claim["spec"] for claim in stateful_set["spec"]["volumeClaimTemplates"]}
    assert {name: spec["resources"]["requests"]["storage"] for name, spec in claims.items()} == {
        "data": "500Mi", "backend": "3Gi"
    }  # fmt: skip
    assert mounts(agent) == {
        "/config": ("config", True), "/data": ("data", False), "/run/a2a-wrapper": ("sockets", False),
        "/srv/a2a": ("backend", False), "/tmp": ("tmp", False),
    }  # fmt: skip
    (namespace,) = objects(files, "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_backends_container_holds_no_secret_and_mounts_no_state(example: str) -> None:
    for stateful_set in objects(render(example, postgres_secret="agents-state"), "StatefulSet"):
        backend = container(stateful_set, "backend")
        assert backend["env"] == [{"name": "HOME", "value": "/tmp"}]  # nothing from a Secret, no key, no token
        assert "envFrom" not in backend and "ports" not in backend
        assert mounts(backend) == {
            "/run/a2a-wrapper": ("sockets", True), "/srv/a2a": ("backend", False), "/tmp": ("backend-tmp", False)
        }  # fmt: skip
        volumes = {volume["name"]: volume for volume in stateful_set["spec"]["template"]["spec"]["volumes"]}
        assert "emptyDir" in volumes["sockets"] and "emptyDir" in volumes["backend-tmp"]
        # The wrapper's own volumes (its state, its config, its /tmp) are mounted in its container only.
        assert mounts(container(stateful_set))["/data"] == ("data", False)
        assert not {"data", "config", "tmp"} & {volume for volume, _ in mounts(backend).values()}


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_pod_config_runs_a_sidecar_on_the_paths_both_containers_mount(
    example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rendered config, loaded by the config model as the pod's `a2a-wrap serve` loads it: runtime sidecar,
    its sockets and folders and the workspace where both containers mount them, the state where only the
    wrapper's does."""
    files = render(example)
    for config_map in objects(files, "ConfigMap"):
        name = config_map["metadata"]["name"].removesuffix("-config")
        path = tmp_path / name / "config.yaml"
        path.parent.mkdir()
        path.write_text(config_map["data"]["config.yaml"])
        for match in VARIABLE.finditer(path.read_text()):
            if match.group(2) is None:  # a key the pod's Secret must hold; the optional ones left out
                monkeypatch.setenv(match.group(1), "set-by-the-secret")
        settings = load_config(path)
        runtime = settings.runtime
        assert isinstance(runtime, SidecarRuntime)
        (stateful_set,) = (each for each in objects(files, "StatefulSet") if each["metadata"]["name"] == name)
        agent, backend = container(stateful_set), container(stateful_set, "backend")
        assert backend["args"] == ["sidecar", "--folders", str(runtime.folders), "--reap-strays"]
        for path_in_both in (runtime.sockets, runtime.folders, settings.backend.workdir):
            assert _volume_at(agent, path_in_both) == _volume_at(backend, path_in_both) is not None
        assert mounts(agent)[str(runtime.sockets)] == ("sockets", False)
        assert mounts(backend)[str(runtime.sockets)] == ("sockets", True)
        assert settings.state_dir is not None
        assert _volume_at(agent, settings.state_dir) == "data"
        assert _volume_at(backend, settings.state_dir) is None


def _volume_at(container: dict[str, Any], path: Path) -> str | None:
    """The volume that holds `path` in the container: the deepest mount at or above it."""
    found = [(len(mount), volume) for mount, (volume, _) in mounts(container).items()
             if path == Path(mount) or Path(mount) in path.parents]  # fmt: skip
    return max(found)[1] if found else None


@pytest.mark.parametrize(
    ("runtime", "kept", "notes"),
    [
        ({"kind": "sandbox", "hosts": ["docs.example.com"], "read": ["/opt"]}, {"hosts": ["docs.example.com"]},
         ["runtime.kind sandbox becomes sidecar", "runtime.read: not used in a pod"]),
        ({"kind": "docker", "image": "x", "cpus": 1.5}, {},
         ["runtime.kind docker becomes sidecar", "runtime.cpus become the container `backend`'s resources",
          "runtime.image: not used in a pod"]),
        ({"kind": "process"}, {}, ["runtime.kind process becomes sidecar: a plain child would share the wrapper's"]),
        ({"kind": "sidecar", "sockets": "/run/mine", "connect_timeout": 30}, {"connect_timeout": 30},
         ["runtime.sockets: not used in a pod"]),
    ],
)  # fmt: skip
def test_what_the_runtime_said_is_kept_or_said_in_a_note(
    tmp_path: Path, runtime: dict[str, Any], kept: dict[str, Any], notes: list[str]
) -> None:
    config = write_config(tmp_path, "moved", runtime=runtime)
    rendering = render_kubernetes(load_deployment([config]), KubernetesOptions())
    documents = yaml.safe_load_all(rendering.files["agent-moved.yaml"])
    (config_map,) = (doc for doc in documents if doc["kind"] == "ConfigMap")
    pod_runtime = yaml.safe_load(config_map["data"]["config.yaml"])["runtime"]
    assert pod_runtime == {
        "kind": "sidecar",
        "sockets": "/run/a2a-wrapper",
        "folders": "/srv/a2a/backend",
        "network": "shared",
        **kept,
    }
    for note in notes:
        assert any(line.startswith(f"moved: {note}") for line in rendering.notes), (note, rendering.notes)
        assert f"# {note}" in rendering.files["agent-moved.yaml"]


def test_an_agent_of_several_callers_is_refused_naming_it_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_CALLER_KEY", CALLER_KEY)
    monkeypatch.setenv("DEPLOY_OTHER_CALLER_KEY", CALLER_KEY + "-other")
    callers = [{"name": "ana", "key_env": "DEPLOY_CALLER_KEY"}, {"name": "bo", "key_env": "DEPLOY_OTHER_CALLER_KEY"}]
    config = write_config(tmp_path, "shared", auth={"callers": callers})
    with pytest.raises(ConfigError) as refused:
        render(config)
    assert str(refused.value) == (
        f"{config}: the agent shared cannot run in a pod, where its backend runs in a container of its own beside "
        "the wrapper's (runtime.kind: sidecar): runtime.kind: sidecar runs every backend as its container's one "
        "user, so it serves one caller, and auth.callers names 2: run an agent (a pod, a compose service) per caller"
    )


@pytest.mark.parametrize(
    ("memory", "quantity"), [("512m", "512Mi"), ("2g", "2Gi"), ("2G", "2Gi"), ("100k", "100Ki"), ("1000b", "1000"),
                             ("1000", "1000")]
)  # fmt: skip
def test_docker_memory_becomes_a_kubernetes_quantity(memory: str, quantity: str) -> None:
    assert memory_quantity(memory) == quantity


@pytest.mark.parametrize(
    ("runtime", "requests", "limits"),
    [
        ({"kind": "docker", "image": "x", "cpus": 1.5, "memory": "3g"}, {"cpu": "1500m", "memory": "3Gi"},
         {"cpu": "1500m", "memory": "3Gi"}),
        ({"kind": "docker", "image": "x", "memory": "512m"}, {"cpu": "250m", "memory": "512Mi"},
         {"cpu": "2", "memory": "512Mi"}),
        ({"kind": "sandbox"}, {"cpu": "250m", "memory": "768Mi"}, {"cpu": "2", "memory": "2Gi"}),
    ],
)  # fmt: skip
def test_resources_come_from_the_runtime(
    tmp_path: Path, runtime: dict[str, Any], requests: dict[str, str], limits: dict[str, str]
) -> None:
    config = write_config(tmp_path, "sized", runtime=runtime)
    (stateful_set,) = objects(render(config), "StatefulSet")
    assert container(stateful_set, "backend")["resources"] == {"requests": requests, "limits": limits}
    wrapper = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    assert container(stateful_set)["resources"] == wrapper  # the wrapper's, whatever the backend's


@pytest.mark.parametrize(
    ("base_url", "rule"),
    [
        ("http://10.20.30.40:8080/v1", {"ports": [{"protocol": "TCP", "port": 8080}],
                                        "to": [{"ipBlock": {"cidr": "10.20.30.40/32"}}]}),
        ("https://models.example.com/v1", {"ports": [{"protocol": "TCP", "port": 443}]}),
        ("http://127.0.0.1:8765/v1", {"ports": [{"protocol": "TCP", "port": 8765}]}),
    ],
)  # fmt: skip
def test_the_network_policy_lets_the_agent_reach_its_provider(
    tmp_path: Path, base_url: str, rule: dict[str, Any]
) -> None:
    provider = {"id": "mine", "base_url": base_url, "models": ["m"]}
    config = write_config(tmp_path, "netted", backend={"model": "mine/m", "provider": provider})
    (policy,) = objects(render(config), "NetworkPolicy")
    dns, provider_rule = policy["spec"]["egress"]
    assert dns["ports"] == [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    assert provider_rule == rule
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 8000}]}]
    (with_postgres,) = objects(render(config, postgres_secret="state"), "NetworkPolicy")
    assert with_postgres["spec"]["egress"][-1] == {"ports": [{"protocol": "TCP", "port": 5432}]}


def test_postgres_is_referenced_by_its_secret() -> None:
    (stateful_set,) = objects(render("agents/code-review/config.yaml", postgres_secret="agents-state"), "StatefulSet")
    env = {item["name"]: item for item in container(stateful_set)["env"]}
    assert env["A2A_WRAP_STATE__URL"]["valueFrom"] == {"secretKeyRef": {"name": "agents-state", "key": "url"}}


def test_the_registry_lists_every_agent_by_its_service() -> None:
    files = render("agents/code-review/config.yaml", "agents/acp-reviewer/config.yaml", namespace="team")
    (deployment,) = objects(files, "Deployment")
    (container,) = containers(deployment)
    agents = [arg.removeprefix("--agent=") for arg in container["args"] if arg.startswith("--agent=")]
    assert agents == ["http://code-review.team.svc:8000", "http://acp-reviewer.team.svc:8000"]
    services = {service["metadata"]["name"] for service in objects(files, "Service")}
    assert services == {"code-review", "acp-reviewer", "registry"}
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert "registry.yaml" not in render("agents/code-review/config.yaml", registry=False)


def test_a_fleet_files_operators_and_url_agents_reach_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_OPERATOR_KEY", CALLER_KEY)
    fleet_file = tmp_path / "fleet.yaml"
    agents = [{"config": str(REPO / "agents/code-review/config.yaml")}, {"url": "http://elsewhere.example:9000"}]
    registry = {"health_interval": 3, "operators": [{"name": "ana", "key_env": "DEPLOY_OPERATOR_KEY"}]}
    fleet_file.write_text(yaml.safe_dump({"registry": registry, "agents": agents}))
    rendering = render_kubernetes(load_deployment([fleet_file]), KubernetesOptions())
    assert CALLER_KEY not in rendering.files["registry.yaml"]
    assert rendering.secrets["registry-keys"] == {"DEPLOY_OPERATOR_KEY": False}
    deployment = next(yaml.safe_load_all(rendering.files["registry.yaml"]))
    kubernetes_validate.validate(deployment, KUBERNETES, strict=True)
    (container,) = containers(deployment)
    assert "--agent=http://elsewhere.example:9000" in container["args"]
    assert "--operator=ana:DEPLOY_OPERATOR_KEY" in container["args"]
    assert "--health-interval=3" in container["args"]
    env = {item["name"]: item.get("valueFrom") for item in container["env"]}
    assert env["DEPLOY_OPERATOR_KEY"] == {"secretKeyRef": {"name": "registry-keys", "key": "DEPLOY_OPERATOR_KEY"}}


def test_the_kustomization_lists_every_file_and_kubectl_builds_it(tmp_path: Path) -> None:
    rendering = render_kubernetes(load_deployment([REPO / "configs/fleet.yaml"]), KubernetesOptions())
    write_rendering(rendering, tmp_path / "k8s")
    written = sorted(path.name for path in (tmp_path / "k8s").iterdir() if path.name != MARKER)
    (kustomization,) = yaml.safe_load_all((tmp_path / "k8s/kustomization.yaml").read_text())
    assert sorted([*kustomization["resources"], "kustomization.yaml"]) == written
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH: the kustomization was checked as YAML only")
    built = subprocess.run(["kubectl", "kustomize", str(tmp_path / "k8s")], capture_output=True, text=True, check=True)
    kinds = sorted(doc["kind"] for doc in yaml.safe_load_all(built.stdout))
    assert kinds == sorted(doc["kind"] for docs in render("configs/fleet.yaml").values() for doc in docs
                           if doc["kind"] != "Kustomization")  # fmt: skip


def test_kubectl_client_dry_run(tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    write_rendering(render_kubernetes(load_deployment([REPO / "configs/fleet.yaml"]), KubernetesOptions()), tmp_path)
    command = ["kubectl", "apply", "--dry-run=client", "-k", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0 and ("connection refused" in result.stderr or "unable to recognize" in result.stderr):
        pytest.skip("kubectl apply --dry-run=client maps kinds through an API server, and none answers here")
    assert result.returncode == 0, result.stderr
    assert "statefulset.apps/code-review created (dry run)" in result.stdout


def test_a_folder_not_written_by_a_render_is_refused_and_a_render_replaces_its_own(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    rendering = render_kubernetes(load_deployment([REPO / "agents/code-review/config.yaml"]), KubernetesOptions())
    with pytest.raises(WrapperError, match="is not empty and was not written by `a2a-wrap deploy kubernetes`"):
        write_rendering(rendering, tmp_path)
    out = tmp_path / "k8s"
    two = load_deployment([REPO / "agents/code-review/config.yaml", REPO / "agents/acp-reviewer/config.yaml"])
    write_rendering(render_kubernetes(two, KubernetesOptions()), out)
    (out / "secrets.yaml").write_text("# the user's own")
    write_rendering(rendering, out)
    assert not (out / "agent-acp-reviewer.yaml").exists()  # an agent no longer rendered leaves no file behind
    assert (out / "agent-code-review.yaml").exists()
    assert (out / "secrets.yaml").read_text() == "# the user's own"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"namespace": "Agents"}, "--namespace: 'Agents' is not at most 63 lowercase letters"),
        ({"storage": "ten"}, "--storage: 'ten' is not a Kubernetes quantity"),
        ({"state_storage": "1 Gi"}, "--state-storage: '1 Gi' is not a Kubernetes quantity"),
        ({"postgres_secret": "my_secret"}, "--postgres-secret: 'my_secret' is not a Secret's name"),
        ({"image": "bad image"}, "--image: 'bad image' is not an image reference"),
    ],
)
def test_options_are_checked(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KubernetesOptions(**options)


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        ({"card": {"name": "Code Review"}}, "card.name: 'Code Review' cannot name Kubernetes objects"),
        ({"card": {"name": "registry"}}, "card.name: 'registry' is the registry's name"),
        ({"backend": {"binary": "/usr/bin/opencode"}}, "backend.binary: a program on this machine"),
    ],
)
def test_configs_a_pod_cannot_run_are_refused(tmp_path: Path, sections: dict[str, Any], message: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"card": {"name": "agent"}, **sections}))
    with pytest.raises(ConfigError, match=message):
        render(path)


@pytest.mark.slow  # an a2a-wrap process
def test_the_command_writes_the_folder_and_says_how_to_apply_it(tmp_path: Path, keyed_agent: Path) -> None:
    out = tmp_path / "manifests"
    command = [sys.executable, "-m", "a2a_wrapper", "deploy", "kubernetes", str(keyed_agent), "-o", str(out)]
    result = subprocess.run([*command, "--postgres-secret", "state"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"Apply: kubectl apply -k {out}" in result.stdout
    assert "keyed-keys: A2A_WRAP_CONSOLE_KEY (optional), DEPLOY_CALLER_KEY, DEPLOY_PROVIDER_KEY" in result.stdout
    assert "state: url" in result.stdout
    assert PROVIDER_KEY not in result.stdout
    assert (out / "agent-keyed.yaml").is_file()
    again = subprocess.run([*command[:-1], str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert again.returncode == 1
    assert "was not written by `a2a-wrap deploy kubernetes`" in again.stderr
    callers = [{"name": "ana", "key_env": "DEPLOY_CALLER_KEY"}, {"name": "bo", "key_env": "DEPLOY_PROVIDER_KEY"}]
    shared = write_config(tmp_path, "shared", auth={"callers": callers})
    refused = subprocess.run([*command[:5], str(shared), "-o", str(tmp_path / "shared-out")], capture_output=True,
                             text=True, timeout=60)  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"Error: {shared}: the agent shared cannot run in a pod"), refused.stderr
    assert "serves one caller" in refused.stderr and "Traceback" not in refused.stderr
