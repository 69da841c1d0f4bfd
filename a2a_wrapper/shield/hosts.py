"""Hosts in URLs, parsed strictly and normalised, so that one host has one spelling.

Only http and https. The host is what follows the *last* `@` (`http://good.com@evil.com` is evil.com).
Refused outright, as a browser and urllib might read them differently: whitespace and control characters,
backslashes, `%` in the host, a missing `//`. IP addresses in any form (`2130706433`, `0x7f000001`,
`0177.0.0.1`, `127.1`, `[::ffff:127.0.0.1]`) become the dotted or compressed form; names are lower-cased,
lose one trailing dot, and non-ASCII names become punycode (`xn--…`), so a Cyrillic look-alike is a
different host. Names with IDNA deviation characters (ß, ς, ZWJ, ZWNJ) are refused: standards disagree
on where they point. Host patterns are exact or `*.example.com`, which matches sub-domains at any depth
but not example.com itself. Names are matched as written; what they resolve to (DNS) is not checked.
"""

import ipaddress
import re
from urllib.parse import urlsplit

_LABELS = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_DEVIATIONS = frozenset("ßς\u200c\u200d")
_HEX = re.compile(r"0x[0-9a-f]*")
_DIGITS = re.compile(r"[0-9]+")


class BadUrl(ValueError):
    pass


def url_host(url: str) -> str:
    """The normalised host of an http(s) URL; raises BadUrl with the reason."""
    if any(ord(c) <= 0x20 or c == "\x7f" for c in url) or "\\" in url:
        raise BadUrl("contains whitespace, control characters or backslashes")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise BadUrl(f"cannot be parsed ({exc})") from exc
    if parts.scheme.lower() not in ("http", "https"):
        raise BadUrl(f"has the scheme `{parts.scheme or '(none)'}`; only http and https are fetched")
    if not url[len(parts.scheme) + 1 :].startswith("//") or not parts.netloc:
        raise BadUrl("has no host")
    host_port = parts.netloc.rpartition("@")[2]
    if host_port.startswith("["):
        host, bracket, rest = host_port[1:].partition("]")
        if not bracket or ":" not in host or (rest and not rest.startswith(":")):
            raise BadUrl("has a malformed [IPv6] host")
        port = rest[1:]
    else:
        host, _, port = host_port.partition(":")
    if port and not (_DIGITS.fullmatch(port) and int(port) < 65536):
        raise BadUrl("has an invalid port")
    return normalize_host(host)


def normalize_host(host: str) -> str:
    if not host or "%" in host:
        raise BadUrl("has an empty or percent-encoded host")
    if ":" in host:
        try:
            ipv6 = ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise BadUrl(f"has an invalid IPv6 address {host!r}") from exc
        return str(ipv6.ipv4_mapped or ipv6)
    if not host.isascii():
        if _DEVIATIONS & set(host):
            raise BadUrl("has a name with IDNA deviation characters (ß, ς, ZWJ, ZWNJ)")
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise BadUrl(f"has a name that is not a valid international domain name ({exc})") from exc
    host = host.lower().removesuffix(".")
    address = _ipv4(host)
    if address is not None:
        return address
    if not _LABELS.fullmatch(host) or any(len(label) > 63 for label in host.split(".")):
        raise BadUrl(f"has a host {host!r} that is not a valid name")
    return host


def _ipv4(host: str) -> str | None:
    """The dotted form when the host is an IPv4 address in any notation (the WHATWG URL rules)."""
    labels = host.split(".")
    if not (_DIGITS.fullmatch(labels[-1]) or _HEX.fullmatch(labels[-1])):
        return None
    if len(labels) > 4:
        raise BadUrl(f"has a host {host!r} that is not a valid IPv4 address")
    numbers = [_number(label, host) for label in labels]
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise BadUrl(f"has a host {host!r} that is not a valid IPv4 address")
    value = numbers[-1] + sum(n * 256 ** (3 - i) for i, n in enumerate(numbers[:-1]))
    return str(ipaddress.IPv4Address(value))


def _number(label: str, host: str) -> int:
    try:
        if label.startswith("0x"):
            return int(label[2:] or "0", 16)
        if len(label) > 1 and label.startswith("0"):
            return int(label, 8)
        return int(label, 10)
    except ValueError as exc:
        raise BadUrl(f"has a host {host!r} that is not a valid IPv4 address") from exc


def check_host_pattern(pattern: str) -> str:
    """The normalised pattern: an exact host, `[::1]`, or `*.domain`."""
    if any(c in pattern for c in "/@?#"):
        raise BadUrl("is not a host name: write the host alone, without scheme, user, port or path")
    if pattern.startswith("*."):
        domain = normalize_host(pattern[2:])
        if _is_ip(domain):
            raise BadUrl("`*.` goes before a domain name, not an IP address")
        return "*." + domain
    if "*" in pattern:
        raise BadUrl("`*` may only stand for the sub-domains, as in `*.example.com`")
    return normalize_host(pattern[1:-1] if pattern.startswith("[") and pattern.endswith("]") else pattern)


def host_matches(pattern: str, host: str) -> bool:
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and not _is_ip(host)
    return host == pattern


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
