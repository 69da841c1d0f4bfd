"""Which connections a server takes, counted per peer, before anything is known of who is calling.

A connection comes before its request, so before its credentials: a cap counted over all connections lets one
client that opens many and sends nothing lock every caller out. Here each peer holds at most `per_peer`
connections, and all peers together at most `total` (the bound on the process's file descriptors): a peer at
its share leaves the rest to the others, whatever it opens.

A peer is an IPv4 address, or an IPv6 /64 (one host is given a whole /64 and may take any address in it); an
IPv4-mapped IPv6 address is its IPv4 address. Behind a reverse proxy every connection is the proxy's: the
forwarded-for header comes with a request, after the connection is counted, and is not trusted anyway (the
proxy's own per-client limits apply there; raise `max_connections_per_peer` to `max_connections`).

Past a cap, a few connections are held to answer their request with 503 and a sentence (REFUSALS in all,
REFUSALS_PER_PEER from one peer); the rest are closed at once, so that refusing costs no descriptor.
"""

import ipaddress
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

IPV6_PEER_PREFIX = 64
REFUSALS = 16
REFUSALS_PER_PEER = 2
UNKNOWN_PEER = "unknown"  # no IP address (a Unix socket): all such connections are one peer


@dataclass(frozen=True)
class Verdict:
    action: Literal["serve", "refuse", "drop"]  # refuse: answer its request with 503, then close; drop: close now
    why: str = ""  # for a refusal, the sentence the 503 says


SERVE = Verdict("serve")
DROP = Verdict("drop")


def peer_of(peername: Any) -> str:
    """The peer a socket's `getpeername()` belongs to: an IPv4 address or an IPv6 /64, as text."""
    host = peername[0] if isinstance(peername, tuple) and peername else None
    try:
        address = ipaddress.ip_address(host) if isinstance(host, str) else None
    except ValueError:
        address = None
    if address is None:
        return UNKNOWN_PEER
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PEER_PREFIX), strict=False))
    return str(address)


class Admission:
    """The open connections of one server, by peer: what each new one may do, and each one's end."""

    def __init__(self, total: int, per_peer: int) -> None:
        self.total = total
        self.per_peer = per_peer
        self._served: Counter[str] = Counter()
        self._refusing: Counter[str] = Counter()

    def admit(self, peer: str) -> Verdict:
        """The verdict on a new connection from `peer`, counted until `release(peer, verdict)`."""
        if self._served[peer] >= self.per_peer:
            why = f"This address holds its limit of {self.per_peer} open connections; close one or try again shortly."
        elif self._served.total() >= self.total:
            why = f"This server is holding its limit of {self.total} open connections; try again shortly."
        else:
            self._served[peer] += 1
            return SERVE
        if self._refusing[peer] >= REFUSALS_PER_PEER or self._refusing.total() >= REFUSALS:
            return DROP
        self._refusing[peer] += 1
        return Verdict("refuse", why)

    def release(self, peer: str, verdict: Verdict) -> None:
        """The connection `verdict` was given to has closed."""
        counts = {"serve": self._served, "refuse": self._refusing}.get(verdict.action)
        if counts is not None:
            counts[peer] -= 1
            if counts[peer] <= 0:
                del counts[peer]

    def open_connections(self) -> int:
        return self._served.total() + self._refusing.total()
