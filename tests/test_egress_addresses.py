"""Egress decided on addresses: a rule that allows every host still reaches no loopback, private, link-local or
CGNAT address, in any spelling, unless the connection is exactly an endpoint the config names.

The attacks run through a real EgressProxy on a real Unix socket; "the wrapper's own port" is a real TCP
listener on 127.0.0.1 that counts what it accepts: it must accept nothing.
"""

import contextlib
import ipaddress
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from a2a_wrapper.addresses import UnresolvableHost, non_public, own, resolve
from a2a_wrapper.config.runtimes import SandboxRuntime
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.sandbox.egress import Destination, EgressDecision, EgressPolicy, EgressProxy
from a2a_wrapper.sandbox.plan import PROXY_PORT
from a2a_wrapper.shield import Shield
from a2a_wrapper.shield.rules import ShieldConfig
from a2a_wrapper.state.audit import recent
from tests.helpers.a2a_wire import final_state, stream
from tests.helpers.behaviour import BACKENDS, Harness
from tests.helpers.listener import listener, through
from tests.helpers.tool_messages import answer_params, bash_params

ALLOW_EVERY_HOST = ShieldConfig.model_validate({"defaults": {"network": "allow"}})
LOCALHOST_RULE = ShieldConfig.model_validate(
    {"rules": [{"name": "local", "decision": "allow", "class": "network", "hosts": ["localhost", "127.0.0.1"]}]}
)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.255.0.9", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),  # IPv4-mapped: the kernel connects to 127.0.0.1
        ("0.0.0.0", "an unspecified address"),
        ("::", "an unspecified address"),
        ("169.254.169.254", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("10.0.0.1", "a private address"),
        ("172.16.5.4", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd00::2", "a private address"),
        ("100.64.0.1", "a non-public address (carrier-grade NAT, 100.64.0.0/10)"),
        ("::ffff:100.64.0.1", "a non-public address (carrier-grade NAT, 100.64.0.0/10)"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("fec0::1", "a site-local address"),
        ("240.0.0.1", "a reserved address"),
        ("192.0.2.1", "a non-public address"),
        ("2002:7f00:1::", "a 6to4 address carrying 127.0.0.1, a loopback address"),
        ("2002:a00:1::", "a 6to4 address carrying 10.0.0.1, a private address"),
        ("64:ff9b::a9fe:a9fe", "a NAT64 address carrying 169.254.169.254, a link-local address"),
        ("::7f00:1", "an IPv4-compatible address carrying 127.0.0.1, a loopback address"),
        ("::808:808", "a reserved address"),  # the old IPv4-compatible form leads nowhere today
        ("8.8.8.8", ""),
        ("2606:4700::1111", ""),
        ("2002:808:808::1", ""),  # 6to4 carrying a public address
        ("64:ff9b::808:808", ""),  # NAT64 to a public IPv4 host: how an IPv6-only network reaches it
    ],
)
def test_each_address_is_judged_for_what_it_is(address: str, kind: str) -> None:
    assert non_public(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize("spelling", ["2130706433", "127.1", "0x7f.1", "0x7f000001", "017700000001", "127.0.0.1"])
async def test_every_spelling_of_loopback_resolves_to_it(spelling: str) -> None:
    assert await resolve(spelling, 80) == [ipaddress.IPv4Address("127.0.0.1")]


async def test_a_name_resolves_to_plain_addresses_once_each() -> None:
    addresses = await resolve("localhost", 80)
    assert ipaddress.IPv4Address("127.0.0.1") in addresses and len(set(addresses)) == len(addresses)
    assert await resolve("::ffff:10.0.0.1", 80) == [ipaddress.IPv4Address("10.0.0.1")]
    with pytest.raises(UnresolvableHost, match="cannot be resolved"):
        await resolve("no-such-host.invalid", 80)


def _own_address() -> ipaddress.IPv4Address | None:
    """This machine's address on its default route, if it has one (a UDP connect sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("8.8.8.8", 9))
            return ipaddress.IPv4Address(probe.getsockname()[0])
    except OSError:
        return None


def test_this_machines_own_addresses_are_known_as_such() -> None:
    assert own(ipaddress.IPv4Address("127.0.0.1")) and own(ipaddress.IPv6Address("::1"))
    assert not own(ipaddress.IPv4Address("8.8.8.8")) and not own(ipaddress.IPv4Address("192.0.2.254"))
    address = _own_address()
    if address is None:
        pytest.skip("this machine has no default route")
    assert own(address)


@contextlib.asynccontextmanager
async def proxy(tmp_path: Path, policy: EgressPolicy) -> AsyncIterator[tuple[EgressProxy, list[EgressDecision]]]:
    decisions: list[EgressDecision] = []

    async def record(decision: EgressDecision, wait_ms: float) -> None:
        decisions.append(decision)

    served = EgressProxy(tmp_path / "egress.sock", policy, record)
    await served.start()
    try:
        yield served, decisions
    finally:
        await served.stop()


# Every way to the listener's port on this machine, and the other non-public places an agent must not reach.
WAYS_IN = [
    ("127.0.0.1", "127.0.0.1 is a loopback address"),
    ("localhost", "localhost resolves to 127.0.0.1, a loopback address"),
    ("0.0.0.0", "0.0.0.0 is an unspecified address"),
    ("[::1]", "::1 is a loopback address"),
    ("[::ffff:127.0.0.1]", "127.0.0.1 is a loopback address"),
    ("[::ffff:7f00:1]", "127.0.0.1 is a loopback address"),
    ("2130706433", "127.0.0.1 is a loopback address"),
    ("127.1", "127.0.0.1 is a loopback address"),
    ("0x7f000001", "127.0.0.1 is a loopback address"),
    ("0x7f.1", "127.0.0.1 is a loopback address"),
    ("0177.0.0.1", "127.0.0.1 is a loopback address"),
    ("127.0.0.2", "127.0.0.2 is a loopback address"),
    ("[2002:7f00:1::]", "a 6to4 address carrying 127.0.0.1, a loopback address"),
    ("[64:ff9b::7f00:1]", "a NAT64 address carrying 127.0.0.1, a loopback address"),
    ("169.254.169.254", "169.254.169.254 is a link-local address"),
    ("10.0.0.1", "10.0.0.1 is a private address"),
    ("100.64.0.1", "100.64.0.1 is a non-public address (carrier-grade NAT"),
    ("[fe80::1]", "fe80::1 is a link-local address"),
    ("224.0.0.1", "224.0.0.1 is a multicast address"),
]


@pytest.mark.parametrize(("config", "hosts"), [(ALLOW_EVERY_HOST, []), (LOCALHOST_RULE, []), (None, ["localhost"])])
async def test_a_rule_that_allows_the_name_reaches_no_address_of_the_wrappers_network(
    tmp_path: Path, config: ShieldConfig | None, hosts: list[str]
) -> None:
    """`network: allow`, a rule naming localhost, runtime.hosts naming it: each lets the NAME through, and every
    address it leads to is still refused, before any connection is made."""
    async with listener() as (port, accepted), listener() as (model_port, model_accepted):
        rules = Shield(config, tmp_path) if config is not None else None
        policy = EgressPolicy({Destination("127.0.0.1", model_port)}, rules, hosts)
        async with proxy(tmp_path, policy) as (egress, decisions):

            async def connect(authority: str) -> bytes:
                return await through(egress.socket_path, f"CONNECT {authority} HTTP/1.1\r\n\r\nping".encode())

            answers = {way: await connect(f"{way}:{port}") for way, _ in WAYS_IN}
            plain = await through(
                egress.socket_path, f"GET http://localhost:{port}/ HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()
            )
            renamed = await connect(f"localhost:{model_port}")
            model = await connect(f"127.0.0.1:{model_port}")
    assert accepted == [], "nothing reached the wrapper's port"
    assert model == b"HTTP/1.1 200 Connection established\r\n\r\npong" and model_accepted == [b"ping"]
    by_address = set()
    for (way, reason), answer in zip(WAYS_IN, answers.values(), strict=True):
        refused = answer.decode()
        assert refused.startswith("HTTP/1.1 403 Forbidden by the sandbox"), (way, refused)
        if "only at the endpoints the config names" in refused:  # else the name was refused: never even resolved
            assert reason in refused, (way, refused)
            by_address.add(way)
    names_allowed = {way for way, _ in WAYS_IN} if config is ALLOW_EVERY_HOST else {"localhost"}
    assert names_allowed <= by_address, "each way the rule lets through by name is refused by its address"
    assert plain.startswith(b"HTTP/1.1 403") and renamed.startswith(b"HTTP/1.1 403"), "not the endpoint as written"
    audited = [d for d in decisions if d.rule == "sandbox:address"]
    assert any(d.target == f"localhost:{port} (127.0.0.1)" and not d.allowed for d in audited), audited
    assert [d.rule for d in decisions if d.allowed] == ["sandbox:endpoint"]


async def test_the_endpoint_the_config_names_by_name_is_reached_at_the_address_resolved(tmp_path: Path) -> None:
    """An endpoint written as `localhost:PORT` (a loopback MCP server) is reached, at an address just resolved."""
    async with listener() as (port, accepted):
        policy = EgressPolicy({Destination("localhost", port)}, None)
        async with proxy(tmp_path, policy) as (egress, decisions):
            answer = await through(egress.socket_path, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\nping".encode())
    if not accepted:  # localhost resolved to ::1 first and nothing listens there: say so, do not pass
        assert answer.startswith(b"HTTP/1.1 502"), answer
        pytest.skip("localhost resolves to ::1 first here")
    assert answer.endswith(b"pong") and decisions[0].rule == "sandbox:endpoint"


@pytest.mark.parametrize(
    ("networks", "address", "allowed"),
    [
        (["10.20.0.0/16"], "10.20.1.2", True),
        (["10.20.0.0/16"], "10.21.1.2", False),
        (["169.254.169.254/32"], "169.254.169.254", True),
        (["fd00:1::/32"], "fd00:1::5", True),
        ([], "8.8.8.8", True),
    ],
)
def test_a_network_in_runtime_hosts_opens_exactly_that_network(
    networks: list[str], address: str, allowed: bool
) -> None:
    hosts = SandboxRuntime(hosts=["db.internal", *networks]).hosts
    policy = EgressPolicy(set(), None, hosts)
    by_name = policy.decide(Destination("db.internal", 5432))
    assert by_name.allowed and by_name.rule == "runtime:hosts"
    judged = policy.judge(by_name, [ipaddress.ip_address(address)])
    assert judged.allowed is allowed, judged.reason
    by_address = policy.decide(Destination(address, 5432))
    assert by_address.allowed is (allowed and address != "8.8.8.8"), "an IP host in an opened network passes by name"


def test_no_network_opens_this_machines_own_addresses() -> None:
    address = _own_address()
    if address is None:
        pytest.skip("this machine has no default route")
    policy = EgressPolicy(set(), None, SandboxRuntime(hosts=[f"{address}/32"]).hosts)
    decision = policy.judge(policy.decide(Destination(str(address), 8000)), [address])
    assert not decision.allowed and "an address of this machine" in decision.reason


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("127.0.0.0/8", "loopback or unspecified"),
        ("127.0.0.1/32", "loopback or unspecified"),
        ("0.0.0.0/0", "loopback or unspecified"),
        ("::/0", "loopback or unspecified"),
        ("::1/128", "loopback or unspecified"),
        ("10.0.0.0/33", "not a network in CIDR form"),
    ],
)
def test_runtime_hosts_never_opens_loopback_and_names_a_bad_entry(entry: str, message: str) -> None:
    with pytest.raises(ValidationError) as invalid:
        SandboxRuntime(hosts=[entry])
    assert "hosts" in str(invalid.value) and repr(entry) in str(invalid.value) and message in str(invalid.value)


def test_runtime_hosts_keeps_host_patterns_and_normalises_networks() -> None:
    assert SandboxRuntime(hosts=["*.Example.org", "10.1.2.3/16"]).hosts == ["*.example.org", "10.1.0.0/16"]


@pytest.mark.slow
async def test_a_sandboxed_agent_allowed_every_host_reaches_nothing_of_this_machine(
    offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient, request: pytest.FixtureRequest
) -> None:
    """The real thing: OpenCode in the sandbox, every class allowed (`network: allow` included), its bash writing
    CONNECTs to the proxy port by hand. Each way to this machine's loopback, the metadata address and private
    networks is refused by address and audited; the listener standing for the wrapper's port accepts nothing."""
    harness = Harness(BACKENDS[0], offline_model, tmp_path, request.node)
    shield = ShieldConfig.model_validate(
        {"defaults": {c: "allow" for c in ("read", "write", "delete", "execute", "network", "mcp")}}
    )
    async with listener() as (port, accepted), harness.serving(shield=shield) as served:
        own_port = served.agent.settings.server.port
        ways = [f"{way}:{port}" for way, _ in WAYS_IN] + [f"127.0.0.1:{own_port}", f"localhost:{own_port}"]
        command = (
            f"for t in {' '.join(repr(way) for way in ways)}; do exec 3<>/dev/tcp/127.0.0.1/{PROXY_PORT}; "
            'printf "CONNECT $t HTTP/1.1\\r\\n\\r\\n" >&3; echo "$t $(head -c 12 <&3)"; exec 3<&-; '
            "done > egress.txt; echo done"
        )
        events = await stream(http, served.jsonrpc, bash_params(command, description="run a command"))
        while final_state(events) == "TASK_STATE_INPUT_REQUIRED":  # /dev/tcp is outside the workspace: asked
            events = await stream(http, served.jsonrpc, answer_params(events[0]["task"], "yes"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        answers = dict(line.rsplit(" ", 2)[0::2] for line in (served.workdir / "egress.txt").read_text().splitlines())
        database = served.agent.settings.state_dir / "state.db"  # type: ignore[operator]
    assert accepted == [], "nothing reached the listener standing for the wrapper's port"
    assert answers == dict.fromkeys(ways, "403"), answers
    refused = {entry.target for entry in recent(database, 200) if entry.rule == "sandbox:address"}
    assert f"localhost:{port} (127.0.0.1)" in refused and f"127.0.0.1:{own_port}" in refused, refused
    assert f"169.254.169.254:{port}" in refused and f"100.64.0.1:{port}" in refused
