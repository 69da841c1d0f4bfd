"""Where a webhook may point (the SSRF check) and what push.allow_hosts accepts: pure tables, no agent."""

import pytest
from pydantic import ValidationError

from a2a_wrapper.config.settings import PushSettings
from a2a_wrapper.push.urls import WebhookPolicy, WebhookRefused


@pytest.mark.parametrize(
    ("allow_hosts", "url", "reason"),
    [
        ([], "http://127.0.0.1:9/hook", "127.0.0.1, a loopback address"),
        ([], "http://localhost/hook", "a loopback address"),
        ([], "http://2130706433/hook", "127.0.0.1, a loopback address"),  # the same address as one number
        ([], "http://[::ffff:10.0.0.1]/hook", "10.0.0.1, a private address"),
        ([], "http://192.168.1.10/hook", "a private address"),
        ([], "http://100.64.0.1/hook", "a non-public address"),
        ([], "http://169.254.169.254/latest/meta-data", "a link-local address"),
        ([], "http://0.0.0.0/hook", "an unspecified address"),
        (["127.0.0.1"], "http://127.0.0.2/hook", "127.0.0.2, a loopback address"),
        (["10.0.0.0/8"], "http://192.168.0.1/hook", "a private address"),
        ([], "ftp://example.com/hook", "only http and https"),
        ([], "http://user:secret@example.com/hook", "put credentials in `authentication`"),
        ([], "http://no-such-host.invalid/hook", "cannot be resolved"),
    ],
)
async def test_refused_with_the_reason(allow_hosts: list[str], url: str, reason: str) -> None:
    policy = WebhookPolicy(PushSettings(allow_hosts=allow_hosts).allow_hosts)
    with pytest.raises(WebhookRefused, match="push") as refused:
        await policy.destination(url)
    assert reason in str(refused.value)


@pytest.mark.parametrize(
    ("allow_hosts", "url", "connects_to", "host_header"),
    [
        ([], "https://8.8.8.8/hook?x=1", "https://8.8.8.8:443/hook?x=1", "8.8.8.8"),
        (["127.0.0.1"], "http://127.0.0.1:8123/hook", "http://127.0.0.1:8123/hook", "127.0.0.1:8123"),
        (["10.0.0.0/8"], "http://10.9.8.7/", "http://10.9.8.7:80/", "10.9.8.7"),
        (["localhost"], "http://LOCALHOST:81/a", "http://127.0.0.1:81/a", "localhost:81"),
        (["::1"], "http://[::1]:81/a", "http://[::1]:81/a", "[::1]:81"),
    ],
)
async def test_allowed_urls_connect_to_the_address_checked(
    allow_hosts: list[str], url: str, connects_to: str, host_header: str
) -> None:
    policy = WebhookPolicy(PushSettings(allow_hosts=allow_hosts).allow_hosts)
    destination = await policy.destination(url)
    assert (destination.url, destination.authority) == (connects_to, host_header)


@pytest.mark.parametrize(
    ("entry", "normalised"),
    [("127.0.0.1", "127.0.0.1"), ("10.1.0.0/16", "10.1.0.0/16"), ("Hooks.Example.COM.", "hooks.example.com")],
)
def test_allow_hosts_takes_hosts_and_networks(entry: str, normalised: str) -> None:
    assert PushSettings(allow_hosts=[entry]).allow_hosts == [normalised]


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "http://hooks.example.com/", "999.1.1.1", "hooks example"])
def test_a_bad_allow_hosts_entry_is_named(entry: str) -> None:
    with pytest.raises(ValidationError) as invalid:
        PushSettings(allow_hosts=[entry])
    assert "allow_hosts" in str(invalid.value) and repr(entry) in str(invalid.value)
