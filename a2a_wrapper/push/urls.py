"""Where webhooks may point: http(s) URLs whose host resolves only to public addresses, or hosts the agent's
config allows (`push.allow_hosts`). A webhook is a request the agent makes on a caller's behalf, an SSRF path
into the agent's own network unless private, loopback and link-local addresses are refused.

Checked twice: when a caller registers the URL (a refusal is the protocol's invalid-params error, with the
reason), and before each delivery, whose connection then goes to the address just checked: a name that has
come to resolve somewhere else since (DNS rebinding) reaches nothing that was not allowed. Resolving and judging
an address is addresses.py's, shared with the sandbox's egress proxy.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from a2a.utils.errors import InvalidParamsError

from a2a_wrapper.addresses import Address, Network, UnresolvableHost, non_public, parse_network, resolve
from a2a_wrapper.shield.hosts import BadUrl, host_matches, url_host


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
        networks = {entry: parse_network(entry) for entry in allow_hosts}
        self._networks: list[Network] = [network for network in networks.values() if network is not None]
        self._hosts = [entry for entry, network in networks.items() if network is None]

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
        try:
            addresses = await resolve(host, port)
        except UnresolvableHost as exc:
            raise Unresolvable(f"The push notification host {host} {exc}.") from None
        named = any(host_matches(pattern, host) for pattern in self._hosts)
        for address in addresses:
            if named or self._allowed(address):
                continue
            raise WebhookRefused(
                f"The push notification host {host} resolves to {address}, {non_public(address)} this agent "
                "does not call; an operator may allow it with push.allow_hosts."
            )
        return addresses[0]

    def _allowed(self, address: Address) -> bool:
        if any(address in network for network in self._networks):
            return True
        if any(host_matches(pattern, str(address)) for pattern in self._hosts):
            return True
        return non_public(address) == ""
