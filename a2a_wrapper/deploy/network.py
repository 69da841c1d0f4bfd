"""How an agent is reached and what it may reach: its Service and its NetworkPolicy."""

import ipaddress
from typing import Any

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.deploy.objects import labels, metadata, selector
from a2a_wrapper.deploy.pod_config import POD_PORT
from a2a_wrapper.sandbox.boundary import endpoints_of
from a2a_wrapper.sandbox.egress import Destination

POSTGRES_PORT = 5432
HTTPS_PORT = 443  # a provider the backend knows by name (anthropic/…, GitHub's models) is reached over HTTPS
NETWORK_POLICY_NOTE = """\
# NetworkPolicy: ingress on 8000 from any pod of this namespace (the registry, orchestrators); egress to DNS in
# kube-system, to the model provider (and MCP servers) the config names, and to Postgres on 5432 when a state
# Secret is given. A NetworkPolicy cannot name hosts: a provider named by host is allowed by its port, to any
# address; one named by IP address is allowed to that address only. The container `backend` shares the pod's
# network, so its egress is this policy's: the wrapper's egress proxy (runtime.hosts, the shield's network rules)
# decides only for clients that use the proxy they are given; a tool that connects directly is bounded by this
# policy alone. Prometheus in another namespace, push webhooks and hosts reached through the shield's network rules
# need a NetworkPolicy of your own. DNS elsewhere than kube-system (NodeLocal DNSCache): change the `dns` rule.
"""


def agent_service(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, namespace, "agent"),
        "spec": {
            "selector": selector(name, "agent"),
            "ports": [{"name": "http", "port": POD_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def agent_network_policy(name: str, namespace: str, settings: AgentSettings, postgres: bool) -> dict[str, Any]:
    """Ingress from the namespace on the A2A port; egress to DNS, the endpoints the config names, Postgres."""
    egress = [dns_rule(), *endpoint_rules(endpoints_of(settings))]
    if postgres:
        egress.append({"ports": [{"protocol": "TCP", "port": POSTGRES_PORT}]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(f"{name}-network", namespace, "agent", labels(name, "agent")),
        "spec": {
            "podSelector": {"matchLabels": selector(name, "agent")},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": POD_PORT}]}],
            "egress": egress,
        },
    }


def dns_rule() -> dict[str, Any]:
    kube_system = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    ports = [{"protocol": protocol, "port": 53} for protocol in ("UDP", "TCP")]
    return {"to": [kube_system], "ports": ports}


def endpoint_rules(endpoints: list[Destination]) -> list[dict[str, Any]]:
    """One rule per port: to the addresses when every endpoint on it is an IP address, else to any address."""
    by_port: dict[int, list[str] | None] = {}
    for destination in endpoints or [Destination("", HTTPS_PORT)]:
        block = _address_block(destination.host)
        known = by_port.get(destination.port, [])
        by_port[destination.port] = None if block is None or known is None else [*known, block]
    rules = []
    for port, blocks in sorted(by_port.items()):
        rule: dict[str, Any] = {"ports": [{"protocol": "TCP", "port": port}]}
        if blocks:
            rule["to"] = [{"ipBlock": {"cidr": block}} for block in sorted(set(blocks))]
        rules.append(rule)
    return rules


def _address_block(host: str) -> str | None:
    """`host` as a one-address CIDR block; None for a name, or a loopback address (in a pod, the model is not on
    the pod's loopback: the URL the pod reads from its Secret names the real host)."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    return None if address.is_loopback else f"{address}/{address.max_prefixlen}"
