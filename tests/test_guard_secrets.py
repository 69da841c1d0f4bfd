"""Credential redaction: a table of what is redacted and what is not, data and log records, linear time."""

import io
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from a2a_wrapper.guard import RedactingFilter, redact, redact_value
from a2a_wrapper.guard.secrets import MAX_HOLD, SECRETS

# Fake credentials of the real shapes, assembled so that no scanner mistakes this file for a leak.
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV01234"
OPENAI = "sk-proj-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCD"
ANTHROPIC = "sk-ant-" + "api03-abcdefghijklmnopqrstuvwxyz0123456789"
SLACK = "xoxb-" + "123456789012-abcdefghijkl"
GOOGLE = "AIza" + "SyA1234567890abcdefghijklmnopqrstuv"
STRIPE = "sk_live_" + "abcdefghijklmnop1234"
NPM = "npm_" + "abcdefghijklmnopqrstuvwxyz0123456789"
PYPI = "pypi-" + "AgEIcHlwaS5vcmcCJGE0ZjY3ZWMxLTk4ZmEtNDcxZS1iZmQxLTk4ZDk2NmYxNzE4ZAACKlszLCJ"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM_BODY = "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naGVsbG8gd29ybGQ=\n"
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "-----END RSA PRIVATE KEY-----"
OPENSSH = [
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "QyNTUxOQAAACBkZWFkYmVlZmRlYWRiZWVmZGVhZGJlZWZkZWFkYmVlZgAAAJi7mA0Tu5gN",
    "EwAAAAtzc2gtZWQyNTUxOQAAACBkZWFkYmVlZmRlYWRiZWVmZGVhZGJlZWZkZWFkYmVlZg",
    "AAAEAK0p1bGlldDpSb21lbzpKdWxpZXQ6Um9tZW86SnVsaWV0OlJvbWVvOkp1bGlldDpS==",
    "-----END OPENSSH PRIVATE KEY-----",
]


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


REDACTED = [
    (f"key {AWS_ID} here", f"key {marker('aws-access-key')} here"),
    ("ASIA" + "Y34FZKBOKMUTVV7A,", f"{marker('aws-access-key')},"),
    (f"aws_secret_access_key = {AWS_SECRET}\n", f"aws_secret_access_key = {marker('aws-secret-key')}\n"),
    (f'{{"SecretAccessKey": "{AWS_SECRET}"}}', f'{{"SecretAccessKey": "{marker("aws-secret-key")}"}}'),
    (f"token {GITHUB} ok", f"token {marker('github-token')} ok"),
    (f"export GH={GITHUB_PAT}", f"export GH={marker('github-token')}"),
    (f"use {OPENAI}.", f"use {marker('openai-key')}."),
    (f"claude {ANTHROPIC}", f"claude {marker('anthropic-key')}"),
    (f"slack {SLACK}", f"slack {marker('slack-token')}"),
    (f"maps?k={GOOGLE}&z=1", f"maps?k={marker('google-api-key')}&z=1"),
    (f"stripe {STRIPE}", f"stripe {marker('stripe-key')}"),
    (f"//npm.example.internal/:_authToken {NPM}", f"//npm.example.internal/:_authToken {marker('npm-token')}"),
    (f"pypi {PYPI}", f"pypi {marker('pypi-token')}"),
    (f"jwt {JWT}. Done", f"jwt {marker('jwt')}. Done"),
    (f"key:\n{PEM}\nafter", f"key:\n{marker('private-key')}\nafter"),
    (f'{{"key": "{PEM.replace(chr(10), chr(92) + "n")}\\n"}}', f'{{"key": "{marker("private-key")}\\n"}}'),
    ("cut: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", f"cut: {marker('private-key')}"),
    (
        'curl -H "Authorization: Bearer abcdef1234567890abcdef" x',
        f'curl -H "Authorization: Bearer {marker("auth-header")}" x',
    ),
    ("Authorization: Basic dXNlcjpwYXNz", f"Authorization: Basic {marker('auth-header')}"),
    ("authorization=0123456789abcdef0123", f"authorization={marker('auth-header')}"),
    ("send it with bearer abcdef1234567890abcdef", f"send it with bearer {marker('bearer-token')}"),
    (
        "git clone https://user:hunter2@example.com/r.git",
        f"git clone https://user:{marker('url-password')}@example.com/r.git",
    ),
    ("redis://:p%40ss@db:6379/0", f"redis://:{marker('url-password')}@db:6379/0"),
    ("GET /cb?code=1&access_token=abcdef&x=1", f"GET /cb?code=1&access_token={marker('credential')}&x=1"),
    ("DB_PASSWORD=supersecret\nDEBUG=1", f"DB_PASSWORD={marker('credential')}\nDEBUG=1"),
    ('{"password": "correct horse battery"}', f'{{"password": "{marker("credential")}"}}'),
    ("secret_key = 'django-insecure'", f"secret_key = '{marker('credential')}'"),
    ("api_key: s3cr3t99", f"api_key: {marker('credential')}"),
    ("mysql --password=hunter42 db", f"mysql --password={marker('credential')} db"),
    (f"OPENAI_API_KEY={OPENAI}", f"OPENAI_API_KEY={marker('credential')}"),
    # a key printed as Python's list of lines, and an encrypted PEM key (headers, then a blank line)
    (str([line + "\n" for line in OPENSSH]), f"['{marker('private-key')}\\n']"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n"
        + PEM_BODY
        + "-----END RSA PRIVATE KEY-----",
        marker("private-key"),
    ),
]

# The line prefixes of numbered listings: a key read through any of them is still one key.
GUTTERS = {
    "opencode read": lambda n: f"{n}: ",
    "older opencode read": lambda n: f"{n:05d}| ",
    "cat -n": lambda n: f"{n:6d}\t",
    "grep -n": lambda n: f"{n}:",
    "grep -Hn -A (context lines)": lambda n: f"keys/id_ed25519{':' if n == 1 else '-'}{n}{':' if n == 1 else '-'}",
    "grep --color -n": lambda n: f"\x1b[32m{n}\x1b[m\x1b[36m:\x1b[m",
    "less -N": lambda n: f"{n:7d} ",
    "bat": lambda n: f"{n:4d} \u2502 ",
    "claude code read": lambda n: f"{n:6d}\u2192",
    "diff (added)": lambda n: "+",
    "diff (removed)": lambda n: "-",
    "quoted": lambda n: "> ",
}


def numbered(gutter: Callable[[int], str], lines: list[str]) -> str:
    return "\n".join(gutter(n) + line for n, line in enumerate(lines, 1))


KEPT = [
    "The quick brown fox jumps over the lazy dog.",
    "commit 3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f fixes it",
    "request 123e4567-e89b-12d3-a456-426614174000",
    "aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBzZWNyZXQ=",
    "eyJhIjogMX0= is base64 of a JSON object, with no dots",
    "pip install sk-learn-compatible-estimators",
    "the task-abcdefghijklmnopqrstuvwxyz012 ran",
    "def login(password: str, token: str | None = None) -> None:",
    "token = get_token()",
    "password = os.environ['DB_PASSWORD']",
    "API_KEY=os.environ['X']",
    "connect(user=user, password=password)",
    "max_tokens: 100000",
    "token_type = 'bearer'",
    'password: "${DB_PASSWORD}"',
    "Authorization: required for every endpoint",
    "A bearer of good news, unquestionably.",
    "http://localhost:8080/path and git@github.com:org/repo.git",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "AKIA is the prefix of an access key id",
    "--- a/file.py\n+++ b/file.py\n@@ -1 +1 @@",
]


@pytest.mark.parametrize(("text", "expected"), REDACTED)
def test_credentials_are_replaced_by_a_marker(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


@pytest.mark.parametrize("gutter", GUTTERS.values(), ids=GUTTERS.keys())
def test_a_key_in_a_numbered_listing_is_redacted_whole(gutter: Callable[[int], str]) -> None:
    listing = f"<content>\n{numbered(gutter, OPENSSH)}\n\n(End of file - total 6 lines)\n</content>"
    expected = f"<content>\n{gutter(1)}{marker('private-key')}\n\n(End of file - total 6 lines)\n</content>"
    assert redact(listing)[0] == expected


@pytest.mark.parametrize("gutter", GUTTERS.values(), ids=GUTTERS.keys())
def test_a_key_listing_cut_before_its_end_is_redacted_to_the_end(gutter: Callable[[int], str]) -> None:
    listing = f"{numbered(gutter, OPENSSH[:3])}\n\n(Output capped at 50 KB. Showing lines 1-3.)\n</content>"
    assert redact(listing)[0] == gutter(1) + marker("private-key")  # what follows an open key may be key


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_and_code_are_kept(text: str) -> None:
    assert redact(text) == (text, [])


@pytest.mark.parametrize(("text", "expected"), REDACTED)
def test_redacting_twice_changes_nothing_more(text: str, expected: str) -> None:
    assert redact(expected)[0] == expected


def test_every_kind_in_the_table_has_a_case() -> None:
    kinds = {f.kind for text, _ in REDACTED for f in redact(text)[1]}
    assert kinds == {s.kind for s in SECRETS}


def test_findings_name_the_kind_and_where_the_value_was_never_the_value() -> None:
    text = f"a={AWS_ID} and https://me:pw@h"
    findings = redact(text)[1]
    assert [(f.kind, text[f.start : f.end]) for f in findings] == [("aws-access-key", AWS_ID), ("url-password", "pw")]
    assert AWS_ID not in repr(findings)


def test_the_leftmost_credential_wins_and_matches_never_overlap() -> None:
    text, findings = redact(f"password={GITHUB} {GITHUB}")
    assert text == f"password={marker('credential')} {marker('github-token')}"
    assert [f.kind for f in findings] == ["credential", "github-token"]


def test_data_parts_and_metadata_are_redacted_in_depth() -> None:
    data: dict[str, Any] = {
        "env": {"GITHUB_TOKEN": "plain-looking", "HOME": "/root", "apiKey": "abc"},
        "args": ["--token", f"{AWS_ID}", ("x", f"Bearer {'a1' * 10}")],
        "headers": {"Authorization": "Basic abc"},
        "max_tokens": 5,
        "token_type": "bearer",
        "password": "",
    }
    assert redact_value(data) == {
        "env": {"GITHUB_TOKEN": marker("credential"), "HOME": "/root", "apiKey": marker("credential")},
        "args": ["--token", marker("aws-access-key"), ("x", f"Bearer {marker('bearer-token')}")],
        "headers": {"Authorization": marker("credential")},
        "max_tokens": 5,
        "token_type": "bearer",
        "password": "",
    }
    assert data["env"]["GITHUB_TOKEN"] == "plain-looking"  # a copy, the input is left alone


def logged(message: str, *args: object, exc: BaseException | None = None) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("test_guard_secrets")
    logger.addHandler(handler)
    try:
        logger.warning(message, *args, exc_info=exc)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def test_log_records_are_redacted_in_message_and_arguments() -> None:
    assert logged("token %s for %s", GITHUB, "alice") == f"token {marker('github-token')} for alice\n"
    assert logged(f"calling https://bob:{'pw9'}@api") == f"calling https://bob:{marker('url-password')}@api\n"


def test_log_tracebacks_are_redacted() -> None:
    try:
        raise RuntimeError(f"bad key {AWS_ID}")
    except RuntimeError as exc:
        text = logged("failed", exc=exc)
    assert AWS_ID not in text and marker("aws-access-key") in text and "Traceback" in text


def test_a_broken_log_format_is_still_redacted() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token %s %s", (GITHUB,), None)
    RedactingFilter().filter(record)
    assert GITHUB not in json.dumps([record.msg, record.args])


def test_the_stream_holds_back_at_most_200_characters() -> None:
    assert MAX_HOLD <= 200


ADVERSARIAL = {
    "one letter": "A" * 1_000_000,
    "dotted jwt start": "eyJ" + "a." * 300_000,
    "jwt starts": "eyJ-" * 250_000,
    "query keys": ("&" + "a" * 30) * 32_000,
    "question marks": "?" * 1_000_000,
    "url colons": "://" + ":" * 1_000_000,
    "assignments": "password=" * 110_000,
    "key headers": "-----BEGIN " * 90_000,
    "unterminated quote": 'password="' + "\\" * 1_000_000,
    "long token": "ghp_" + "a" * 1_000_000,
    "key words": "aws_secret_access_key=" * 45_000,
    "bearers": "bearer " * 140_000,
    "dashes": "-" * 1_000_000,
    "an open key block": "-----BEGIN RSA PRIVATE KEY-----\n" + "12: a-b\n" * 120_000,
    "key headers only": "-----BEGIN RSA PRIVATE KEY-----" * 32_000,
}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_a_megabyte_of_adversarial_text_is_redacted_in_linear_time(text: str) -> None:
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 2.0
