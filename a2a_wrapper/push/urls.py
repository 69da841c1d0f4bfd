"""Where webhooks may point: http(s) URLs whose host resolves only to public addresses, or hosts the agent's
config allows (`push.allow_hosts`). A webhook is a request the agent makes on a caller's behalf, an SSRF path
into the agent's own network unless private, loopback and link-local addresses are refused.

Checked twice: when a caller registers the URL (a refusal is the protocol's invalid-params error, with the
reason), and before each delivery, whose connection then goes to the address just checked: a name that has
come to resolve somewhere else since (DNS rebinding) reaches nothing that was not allowed.
"""

import asyncio
import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from a2a.utils.errors import InvalidParamsError

from a2a_wrapper.shield.hosts import BadUrl, host_matches, url_host

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_NETWORK = re.compile(r"[0-9a-fA-F:.]+/[0-9]+")  # what config/settings.py reads as a CIDR entry


class WebhookRefused(ValueError):
    """A webhook URL that may not be called; the message says why."""


class Unresolvable(WebhookRefused):
    """A host that resolves to nothing, now: refused at registration, tried again at delivery."""


@dataclass(frozen=True, slots=True)
class Destination:
    """Where one delivery goes: the URL with the checked address in place of its host, and the host's name for
    the Host header and TLS (certificate and SNI)."""

    url: str
    host: str
    authority: str  # the Host header: the name and, when not the scheme's default, the port


class WebhookPolicy:
    def __init__(self, allow_hosts: Sequence[str]) -> None:
        """`allow_hosts` as config/settings.py normalises them: networks in CIDR form, or host patterns."""
        self._networks: list[Network] = [ipaddress.ip_network(e) for e in allow_hosts if _NETWORK.fullmatch(e)]
        self._hosts = [entry for entry in allow_hosts if not _NETWORK.fullmatch(entry)]

    async def validate(self, url: str) -> bool:
        """The request handler's check of a URL a caller registers: True, or the protocol's invalid-params error
        carrying the reason (the handler's own refusal would say only "Invalid push notification URL")."""
        try:
            await self.destination(url)
        except WebhookRefused as exc:
            raise InvalidParamsError(message=str(exc)) from None
        return True

    async def destination(self, url: str) -> Destination:
        """Where `url` may be called now; raises WebhookRefused with a sentence naming the reason."""
        try:
            host = url_host(url)
        except BadUrl as exc:
            raise WebhookRefused(f"The push notification URL {url!r} {exc}.") from None
        parts = urlsplit(url)
        if "@" in parts.netloc:
            raise WebhookRefused(
                "The push notification URL carries a user name or password; put credentials in `authentication`."
            )
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        address = await self._checked_address(host, port)
        netloc = f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"
        checked = urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))
        name = f"[{host}]" if ":" in host else host
        return Destination(checked, host, name if parts.port is None else f"{name}:{parts.port}")

    async def _checked_address(self, host: str, port: int) -> Address:
        addresses = await _resolve(host, port)
        named = any(host_matches(pattern, host) for pattern in self._hosts)
        for address in addresses:
            if named or self._allowed(address):
                continue
            raise WebhookRefused(
                f"The push notification host {host} resolves to {address}, {_kind(address)} address this agent "
                "does not call; an operator may allow it with push.allow_hosts."
            )
        return addresses[0]

    def _allowed(self, address: Address) -> bool:
        if any(address in network for network in self._networks):
            return True
        if any(host_matches(pattern, str(address)) for pattern in self._hosts):
            return True
        return _kind(address) == ""


async def _resolve(host: str, port: int) -> list[Address]:
    try:
        return [_plain(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise Unresolvable(f"The push notification host {host} cannot be resolved ({exc.strerror}).") from None
    addresses = [_plain(ipaddress.ip_address(str(info[4][0]).split("%")[0])) for info in infos]
    if not addresses:
        raise Unresolvable(f"The push notification host {host} resolves to no address.")
    return addresses


def _plain(address: Address) -> Address:
    """An IPv4-mapped IPv6 address is the IPv4 address it carries, and judged as such."""
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped if mapped is not None else address


def _kind(address: Address) -> str:
    """What makes an address one a webhook may not reach by default (as a2a-sdk's own validator judges), or ""."""
    checks = (
        ("a loopback", address.is_loopback),
        ("a link-local", address.is_link_local),
        ("a multicast", address.is_multicast),
        ("an unspecified", address.is_unspecified),
        ("a reserved", address.is_reserved),
        ("a private", address.is_private),
        ("a non-public", not address.is_global),
    )
    return next((kind for kind, applies in checks if applies), "")
