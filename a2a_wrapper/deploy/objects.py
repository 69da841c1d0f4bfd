"""What every rendered Kubernetes object shares: names that Kubernetes accepts, labels, metadata."""

import re
from typing import Any, Literal

import yaml

from a2a_wrapper.errors import ConfigError

Component = Literal["agent", "backend", "registry"]
# A StatefulSet's name goes into its pods' controller-revision-hash label (63 characters with the hash).
MAX_NAME = 52
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def object_name(name: str, what: str) -> str:
    """`name` if it can name a Service (a DNS label), else refused naming `what` and the rule."""
    if len(name) <= MAX_NAME and _DNS_LABEL.match(name):
        return name
    raise ConfigError(
        f"{what}: {name!r} cannot name Kubernetes objects: use at most {MAX_NAME} lowercase letters, digits and "
        "'-', starting with a letter and ending with a letter or digit"
    )


def selector(name: str, component: Component) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "a2a-wrapper",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/component": component,
    }


def labels(name: str, component: Component) -> dict[str, str]:
    return {**selector(name, component), "app.kubernetes.io/managed-by": "a2a-wrap"}


def metadata(
    name: str, namespace: str, component: Component, object_labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": object_labels or labels(name, component)}


def namespace_object(namespace: str) -> dict[str, Any]:
    """The namespace, enforcing the `restricted` Pod Security Standard that every rendered pod meets."""
    pod_security = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {"app.kubernetes.io/managed-by": "a2a-wrap", **pod_security}},
    }


def kustomization(files: list[str]) -> dict[str, Any]:
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": files}


class _Dumper(yaml.SafeDumper):
    """Plain YAML a person reads: no anchors for repeated parts, multi-line text (a config file) as a block."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_Dumper.add_representer(str, _text)


def dump_yaml(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
