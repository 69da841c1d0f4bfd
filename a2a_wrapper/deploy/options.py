"""What `a2a-wrap deploy kubernetes` is told besides the configs: image, namespace, volume sizes, Postgres, registry."""

import re
from dataclasses import dataclass

from a2a_wrapper.errors import ConfigError

DEFAULT_IMAGE = "local/a2a-wrapper:dev"  # compose/build-image.sh builds it
DEFAULT_NAMESPACE = "a2a-fleet"
DEFAULT_STORAGE = "10Gi"
DEFAULT_STATE_STORAGE = "1Gi"
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")


@dataclass(frozen=True)
class KubernetesOptions:
    image: str = DEFAULT_IMAGE
    namespace: str = DEFAULT_NAMESPACE
    storage: str = DEFAULT_STORAGE  # each agent's backend's PersistentVolumeClaim: its folders, the workspace
    state_storage: str = DEFAULT_STATE_STORAGE  # each agent's wrapper's: its state (tasks, sessions, audit)
    postgres_secret: str | None = None  # a Secret whose key `url` is the state's Postgres URL
    registry: bool = True
    backend_pod: bool = False  # each agent's backend in a pod of its own (deploy/backend_pod.py)

    def __post_init__(self) -> None:
        checks = [
            ("--image", self.image, _IMAGE, "an image reference such as registry.example.com/a2a-wrapper:1.0"),
            ("--namespace", self.namespace, _DNS_LABEL, "at most 63 lowercase letters, digits and '-'"),
            ("--storage", self.storage, _QUANTITY, "a Kubernetes quantity such as 10Gi or 500Mi"),
            ("--state-storage", self.state_storage, _QUANTITY, "a Kubernetes quantity such as 1Gi or 500Mi"),
        ]
        if self.postgres_secret is not None:
            checks.append(("--postgres-secret", self.postgres_secret, _DNS_LABEL, "a Secret's name"))
        for flag, value, pattern, expected in checks:
            if len(value) > 253 or not pattern.match(value) or (flag == "--namespace" and len(value) > 63):
                raise ConfigError(f"{flag}: {value!r} is not {expected}")
