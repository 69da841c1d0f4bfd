"""URLs parsed strictly; one host, one spelling."""

import re

import pytest

from a2a_wrapper.shield.hosts import BadUrl, check_host_pattern, host_matches, url_host


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://docs.python.org/3/", "docs.python.org"),
        ("HTTPS://DOCS.Python.ORG/", "docs.python.org"),
        ("https://docs.python.org./", "docs.python.org"),
        ("https://docs.python.org:8443/x?y#z", "docs.python.org"),
        ("http://user:pw@docs.python.org/", "docs.python.org"),
        ("http://docs.python.org@evil.com/", "evil.com"),
        ("http://docs.python.org:80@evil.com/", "evil.com"),
        ("http://a@b@evil.com/", "evil.com"),
        ("http://evil.com#@docs.python.org", "evil.com"),
        ("http://evil.com?@docs.python.org", "evil.com"),
        ("http://127.0.0.1/", "127.0.0.1"),
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://0X7F000001/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://0177.0000.0000.0001/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://127.0.0.1./", "127.0.0.1"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
        ("http://0xa9fea9fe/", "169.254.169.254"),
        ("http://[::1]/", "::1"),
        ("http://[0:0:0:0:0:0:0:1]:8080/", "::1"),
        ("http://[::ffff:127.0.0.1]/", "127.0.0.1"),
        ("http://[::ffff:7f00:1]/", "127.0.0.1"),
        ("http://\uff44\uff4f\uff43\uff53.python.org/", "docs.python.org"),  # fullwidth: a browser goes there too
        ("http://d\u043ecs.python.org/", "xn--dcs-sed.python.org"),  # a Cyrillic o: another host
        ("http://b\u00fccher.de/", "xn--bcher-kva.de"),
    ],
)
def test_url_host(url: str, host: str) -> None:
    assert url_host(url) == host


@pytest.mark.parametrize(
    ("url", "because"),
    [
        ("file:///etc/passwd", "scheme `file`"),
        ("javascript:alert(1)", "scheme `javascript`"),
        ("gopher://evil.com:70/", "scheme `gopher`"),
        ("ftp://evil.com/", "scheme `ftp`"),
        ("data:text/html,hi", "scheme `data`"),
        ("//evil.com/", "scheme `(none)`"),
        ("evil.com", "scheme `(none)`"),
        ("https:evil.com", "no host"),
        ("https:/evil.com", "no host"),
        ("http:///evil.com", "no host"),
        ("http://", "no host"),
        ("http://evil.com\\@docs.python.org/", "backslashes"),
        ("http://docs.python.org\t.evil.com/", "control"),
        ("http://docs.python.org\n.evil.com/", "control"),
        (" http://docs.python.org/", "whitespace"),
        ("http://docs.python.org\0.evil.com/", "control"),
        ("http://%65vil.com/", "percent"),
        ("http://docs.python.org:99999/", "port"),
        ("http://docs.python.org:8o/", "port"),
        ("http://[::1/", "IPv6"),
        ("http://[127.0.0.1]/", "cannot be in brackets"),
        ("http://1.2.3.256/", "IPv4"),
        ("http://08.0.0.1/", "IPv4"),
        ("http://1.2.3.4.5/", "IPv4"),
        ("http://4294967296/", "IPv4"),
        ("http://stra\u00dfe.de/", "deviation"),
        ("http://a..b/", "not a valid"),
        ("http://ev_il!.com/", "not a valid"),
    ],
)
def test_bad_urls(url: str, because: str) -> None:
    with pytest.raises(BadUrl, match=re.escape(because)):
        url_host(url)


@pytest.mark.parametrize(
    ("pattern", "host", "expected"),
    [
        ("docs.python.org", "docs.python.org", True),
        ("DOCS.python.org.", "docs.python.org", True),
        ("docs.python.org", "docs.python.org.evil.com", False),
        ("docs.python.org", "evil-docs.python.org", False),
        ("*.readthedocs.io", "pip.readthedocs.io", True),
        ("*.readthedocs.io", "a.b.readthedocs.io", True),
        ("*.readthedocs.io", "readthedocs.io", False),  # sub-domains only
        ("*.readthedocs.io", "evilreadthedocs.io", False),
        ("*.readthedocs.io", "readthedocs.io.evil.com", False),
        ("127.0.0.1", "127.0.0.1", True),
        ("2130706433", "127.0.0.1", True),  # patterns are normalised like hosts
        ("[::1]", "::1", True),
        ("::1", "::1", True),
    ],
)
def test_host_patterns(pattern: str, host: str, expected: bool) -> None:
    assert host_matches(check_host_pattern(pattern), host) is expected


@pytest.mark.parametrize("pattern", ["ev*l.com", "*", "*.*.com", "*.127.0.0.1", "a b", "http://x.com"])
def test_bad_host_patterns(pattern: str) -> None:
    with pytest.raises(BadUrl):
        check_host_pattern(pattern)
