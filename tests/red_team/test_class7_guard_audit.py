"""Red team, class 7: a credential leaves past the guard, or lands in the audit or the log.

Each variant is a credential as it would appear in a tool's output or a command line, with a marker value. It
goes through the three real sinks: the answer (the streamed redactor, fed one character at a time, as deltas
arrive), the audit (a row written by AuditLog to a real SQLite file and read back), the log (a file written
through the RedactingFilter the CLI puts on its handler). The effect looked at: the marker in what was stored.
"""

import base64
import logging
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from a2a_wrapper.guard import RedactingFilter, StreamRedactor
from a2a_wrapper.state.audit import AuditEntry, AuditLog, recent

pytestmark = pytest.mark.slow

MARK = "Rq7Zx2Lk9Vb4Np8Wm3Tf"  # no format's own shape: what must not be stored
VARIANTS = [
    # formats the issue did not list, as a tool's output shows them
    pytest.param(f"slack says xoxb-123456789012-1234567890123-{MARK}abcd", id="slack-bot-token"),
    pytest.param(f"STRIPE=sk_live_{MARK}1234", id="stripe-live-key"),
    pytest.param(f"//registry.npmjs.org/:_authToken=npm_{MARK}abcdefghijklmnop", id="npmrc-auth-token"),
    pytest.param(f"[default]\naws_secret_access_key = {MARK}abcdefghijklmnopqrst", id="aws-credentials-file"),
    pytest.param(f"mongodb://admin:{MARK}@db.internal:27017/app", id="mongodb-url-password"),
    pytest.param(f"git clone https://oauth2:{MARK}@gitlab.example/g/p.git", id="git-url-token"),
    pytest.param(f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{MARK}abcdefghijk", id="jwt"),
    pytest.param(f"Authorization: Basic {base64.b64encode(f'me:{MARK}'.encode()).decode()}", id="basic-auth-header"),
    pytest.param(f"key=AIzaSy{MARK}0123456789abcde", id="google-api-key"),
    pytest.param(f"HF_HUB=hf_{MARK}abcdefghijklmn", id="huggingface-token"),
    pytest.param(
        f"https://hooks.slack.com/services/T00000000/B00000000/{MARK}abcd",
        id="slack-webhook-url",
    ),
    pytest.param(
        f"https://discord.com/api/webhooks/123456789012345678/{MARK}{MARK}abcdefgh",
        id="discord-webhook-url",
    ),
    pytest.param(f"bot123456789:AAE{MARK}abcdefghijklmno", id="telegram-bot-token"),
    pytest.param(f"vault: hvs.CAESI{MARK}{MARK}", id="vault-token"),
    pytest.param(f"dop_v1_{MARK}{MARK}{MARK}abcd", id="digitalocean-token"),
    pytest.param(
        f"https://acct.blob.core.windows.net/c/b?sv=2020-08-04&ss=b&sig={MARK}abc%2Bdef%3D",
        id="azure-sas-signature",
    ),
    pytest.param(
        f"AGE-SECRET-KEY-1{MARK.upper()}QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
        id="age-secret-key",
    ),
    # credentials on command lines, as the audit's target and the log's line carry them
    pytest.param(f"mysql --password={MARK} -u root app", id="mysql-password-flag"),
    pytest.param(f"PGPASSWORD={MARK} psql -h db app", id="pgpassword-env-prefix"),
    pytest.param(f"redis-cli -a {MARK} -h cache", id="redis-cli-a"),
    pytest.param(f"smbclient //fs/share -U admin%{MARK}", id="smbclient-user-percent"),
    pytest.param(f"ldapsearch -x -D cn=admin -w {MARK} -b dc=example", id="ldapsearch-w"),
    pytest.param(f"wget --user=me --password={MARK} https://example.org/f", id="wget-password"),
    pytest.param(f"mongosh -u admin -p {MARK} --host db", id="mongosh-p"),
    pytest.param(f"openssl rsa -in k.pem -passin pass:{MARK}", id="openssl-passin"),
    pytest.param(f"gpg --batch --passphrase {MARK} -d f.gpg", id="gpg-passphrase"),
    pytest.param(f"keytool -list -keystore k.jks -storepass {MARK}", id="keytool-storepass"),
    pytest.param(f"htpasswd -b .htpasswd admin {MARK}", id="htpasswd-b"),
    pytest.param(f"zip -P {MARK} out.zip secret.txt", id="zip-P"),
]


def _streamed(text: str) -> str:
    redactor = StreamRedactor()
    return "".join(redactor.feed(char) for char in text) + redactor.flush()


async def _audited(text: str, database: Path) -> str:
    engine = create_async_engine(f"sqlite+aiosqlite:///{database}")
    try:
        audit = AuditLog(engine)
        await audit.initialize()
        await audit.record(AuditEntry(1.0, "red", "ctx", "task", "", "bash", "execute", text, "allow", "r", "rules", 1))
    finally:
        await engine.dispose()
    return recent(database, 1)[0].target


def _logged(text: str, log_file: Path) -> str:
    handler = logging.FileHandler(log_file)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("tests.red_team.guard")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("[%s] allow bash (execute) %s: rule %s", "red", text, "auto")
    finally:
        logger.removeHandler(handler)
        handler.close()
    return log_file.read_text()


@pytest.mark.parametrize("text", VARIANTS)
async def test_a_credential_is_stored_by_no_sink(text: str, tmp_path: Path) -> None:
    stored = {
        "answer": _streamed(f"tool output:\n{text}\n(end)"),
        "audit": await _audited(text, tmp_path / "state.db"),
        "log": _logged(text, tmp_path / "agent.log"),
    }
    leaked = {sink: value for sink, value in stored.items() if MARK in value or MARK.upper() in value}
    assert not leaked, leaked
