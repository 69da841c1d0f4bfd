"""Where a host leads: its name resolved once, and each address it resolves to judged public or not.

A rule about NAMES says nothing about where a name leads: `localhost`, `2130706433`, `[::ffff:127.0.0.1]`, a
name whose DNS answer is 10.0.0.1 all land in the wrapper's own network. So whatever calls out on the agent's
behalf (the sandbox's egress proxy, push's webhooks) resolves the host here, judges every address, and then
connects to an address it judged — never to the name again, so a second DNS answer (rebinding) reaches nothing
unchecked.

Judged non-public: unspecified, loopback, link-local, multicast, carrier-grade NAT (100.64.0.0/10), private
(RFC 1918, IPv6 ULA), site-local, reserved, and whatever else IANA does not call globally reachable
(documentation, benchmarking, 0.0.0.0/8 …). An IPv4-mapped IPv6 address *is* its IPv4 address to the kernel,
so it is judged, connected to and named as that; an IPv6 address that carries an IPv4 one (6to4, the NAT64
well-known prefix, the old IPv4-compatible form) is judged by the address it carries as well. Every other
spelling of an address (`127.1`, `0x7f.1`, `017700000001`) is an IPv4 address once parsed or resolved: the
judgement is made on the parsed address, never on the text.
"""

import asyncio
import ipaddress
import re
import socket

from a2a_wrapper.errors import WrapperError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_CIDR = re.compile(r"[0-9a-fA-F:.]+/[0-9]+")
_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
_PRIVATE = tuple(map(ipaddress.ip_network, ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")))
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")
# Whatever reaches this machine's own ports on any port: never opened by a network an operator names.
LOCAL_NETWORKS = tuple(map(ipaddress.ip_network, ("127.0.0.0/8", "0.0.0.0/8", "::1/128", "::/128")))


class UnresolvableHost(WrapperError):
    """A name that resolves to nothing now; the message completes "The host X …" (`cannot be resolved (…)`)."""


async def resolve(host: str, port: int) -> list[Address]:
    """Every address `host` leads to, in the resolver's order, each once and plain: an IP address is itself,
    a name is resolved once. Raises UnresolvableHost."""
    try:
        return [plain(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise UnresolvableHost(f"cannot be resolved ({exc.strerror or exc})") from None
    # a scoped IPv6 address (fe80::1%eth0) is judged without its scope
    addresses = [plain(ipaddress.ip_address(str(info[4][0]).split("%")[0])) for info in infos]
    if not addresses:
        raise UnresolvableHost("resolves to no address")
    return list(dict.fromkeys(addresses))


def plain(address: Address) -> Address:
    """An IPv4-mapped IPv6 address is the IPv4 address it carries (the kernel connects to that), and judged as such."""
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped if mapped is not None else address


def non_public(address: Address) -> str:
    """What makes `address` one that is not on the public internet, as a phrase ("a loopback address"), or ""."""
    address = plain(address)
    if isinstance(address, ipaddress.IPv6Address):
        carried = _carried(address)
        if carried is not None:
            label, inner = carried
            kind = non_public(inner)
            if kind:
                return f"{label} carrying {inner}, {kind}"
            if label == "a NAT64 address":  # the well-known prefix is reserved, but leads to a public IPv4 host
                return ""
    checks = (
        ("an unspecified address", address.is_unspecified),
        ("a loopback address", address.is_loopback),
        ("a link-local address", address.is_link_local),
        ("a multicast address", address.is_multicast),
        ("a non-public address (carrier-grade NAT, 100.64.0.0/10)", address in _CGNAT),
        ("a private address", any(address in network for network in _PRIVATE)),
        ("a site-local address", getattr(address, "is_site_local", False)),
        ("a reserved address", address.is_reserved),
        ("a non-public address", not address.is_global),
    )
    return next((kind for kind, applies in checks if applies), "")


def _carried(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 address carries, if it is of a form that carries one, with the form's name."""
    if address.sixtofour is not None:
        return "a 6to4 address", address.sixtofour
    if address in _NAT64:
        return "a NAT64 address", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _COMPATIBLE and int(address) > 1:  # not :: nor ::1, which are themselves
        return "an IPv4-compatible address", ipaddress.IPv4Address(int(address))
    return None


def own(address: Address) -> bool:
    """An address of this machine's own interfaces (its LAN or public address, a pod's IP): a connection there
    reaches services listening on every interface. Asked of the kernel's routing, which picks the destination
    itself as the source of a packet to a local address; a UDP socket's connect sends nothing."""
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((str(address), 9))
            source = probe.getsockname()[0]
    except OSError:  # no route (or no IPv6 here): not an address of this machine
        return False
    return ipaddress.ip_address(source.split("%")[0]) == address


def parse_network(entry: str) -> Network | None:
    """The network a config entry in CIDR form names (`10.0.0.0/8`, host bits dropped), or None for an entry
    that is not in CIDR form (a host). Raises ValueError when it is, but names no network."""
    if not _CIDR.fullmatch(entry):
        return None
    return ipaddress.ip_network(entry, strict=False)


def host_port(text: str) -> tuple[str, int]:
    """HOST:PORT ([v6]:PORT too) as (host, port), or a ValueError naming the text."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)
