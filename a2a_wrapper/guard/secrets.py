"""Credentials redacted from text, JSON-like data and log records before they leave the process.

`SECRETS` is the one table of credential shapes. Each entry replaces its `value` with `[REDACTED:<kind>]` and
keeps `before`/`after` (a key name, a scheme, a quote) so the output still reads. The leftmost match wins, ties
going to the earlier entry; `stream.StreamRedactor` reproduces exactly that on a stream. Patterns are written
with `grammar`, so that the stream can tell which text may still grow into a secret.
"""

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .encodings import base64_middles
from .grammar import (
    EMPTY,
    Node,
    Tail,
    ahead,
    alt,
    behind,
    cls,
    ends_with,
    first_chars,
    lit,
    not_ahead,
    not_behind,
    opt,
    run,
    seq,
    triggers,
)


@dataclass(frozen=True, slots=True)
class Finding:
    """A redacted credential: its kind and where its value was in the original text (never the value)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Secret:
    """One credential shape: `value` is replaced, `before` and `after` are kept, `tail` extends the value."""

    kind: str
    value: Node
    before: Node = EMPTY
    after: Node = EMPTY
    tail: Tail | None = None

    def __post_init__(self) -> None:
        if self.tail and self.after is not EMPTY:
            raise ValueError(f"{self.kind}: a value with an open tail cannot be followed by kept text")

    @property
    def head(self) -> Node:
        return seq(self.before, self.value, self.after)

    @property
    def marker(self) -> str:
        return f"[REDACTED:{self.kind}]"


TOKEN = "[A-Za-z0-9_-]"
ALNUM = "[A-Za-z0-9]"
# Tokens start at a word start: no false hits inside longer words, and one attempt per run keeps it linear.
START, STOP = not_behind(TOKEN), not_ahead(TOKEN)
HEADER_VALUE = "[A-Za-z0-9._~+/=-]"  # RFC 6750 token68
WS, QUOTE = "[ \t]", "[\"']"
# A key name counts as a credential when it ends with one of these (`db_password`, `apiKey`, `GITHUB_TOKEN`);
# `max_tokens` or `token_type` do not.
KEYWORDS = ("password", "passwd", "passphrase", "secret", "secret_key", "secret-key", "secretkey", "token",
            "api_key", "api-key", "apikey", "access_key", "access-key", "accesskey", "private_key", "private-key",
            "privatekey")  # fmt: skip
KEYWORD = lit(*KEYWORDS, ci=True)
SEP = seq(opt(cls(QUOTE)), run(WS, 0, 3), alt(lit(":=", "=>"), cls("[:=]")), run(WS, 0, 3))
# `${TOKEN}`, `<your key>`, `{{ secrets.X }}` are references, not values; a marker is already redacted
NOT_PLACEHOLDER = seq(not_ahead("[$<{]"), not_ahead(lit("[REDACTED:")))
UNQUOTED = "[A-Za-z0-9_+/=.~!@#%^*:-]"
ENV_VALUE = "[^\\s\"'`$;&|<>(){}\\[\\],]"
PEM_LABEL = seq(run("[A-Z0-9 ]", 0, 40, backtrack=True), lit("PRIVATE KEY"), opt(lit(" BLOCK")), lit("-----"))
# A private key block runs to its END line, whatever stands between: line numbers and paths of a listing
# (`12: `, `00012| `, `key.pem-12-`, colour codes), quotes of a printed list, encrypted-key headers. Only a
# double dash, which key text never holds, cuts it short: an END line (after a diff's or grep's own `-`), a
# `---` rule, grep's `--` separator. Without either, what follows an open key may be key: it goes too.
PEM_TEXT = alt(cls("[^-]"), seq(lit("-"), cls("[^-]")))
PEM_END = seq(opt(lit("-")), lit("-----END "), PEM_LABEL)


def _digit_within(letters: str) -> Node:
    """A digit among the next 60 characters of `letters`: random tokens have one, code like `token=token` not."""
    return ahead(seq(run(letters, 0, 60), cls("[0-9]")))


def _quoted(quote: str) -> Secret:
    unit = alt(cls(f"[^{quote}\\\\\\n]"), seq(lit("\\"), cls("[^\\n]")))
    return Secret("credential", before=seq(KEYWORD, SEP, lit(quote)), value=seq(NOT_PLACEHOLDER, unit), tail=Tail(unit))


def _token(kind: str, prefixes: tuple[str, ...], chars: str, length: int, *, exact: bool = False) -> Secret:
    """A token with a fixed prefix: `length` more characters decide it; unless `exact`, the rest is its tail."""
    body = seq(START, lit(*prefixes), run(chars, length, length))
    return Secret(kind, seq(body, STOP)) if exact else Secret(kind, body, tail=Tail(cls(chars)))


B64 = "[A-Za-z0-9+/]"
B64_RUN = "[A-Za-z0-9+/=]"
SAS = "[A-Za-z0-9+/=%]"  # base64, percent-encoded in a URL
# A private key's DER body, as a PEM body starts without its BEGIN line: a SEQUENCE whose first item is the
# version INTEGER 0 or 1 (PKCS#1, PKCS#8, SEC1), at each length form; a certificate's or public key's first item
# is another SEQUENCE. In base64 those bytes pin these characters. And OpenSSH's `openssh-key-v1` magic.
DER_KEY = alt(
    seq(lit("MII"), cls(B64), cls(B64), cls("[AQgw]"), lit("IBA")),  # 30 82 xx xx 02 01 0v
    seq(lit("MIG", "MIH"), cls(B64), lit("AgEA", "AgEB")),  # 30 81 xx 02 01 0v
    seq(lit("M"), cls("[A-H]"), cls("[AEIMQUYcgkosw048]"), lit("CAQ"), cls("[A-H]")),  # 30 xx 02 01 0v
    lit("b3BlbnNzaC1rZXktdjE"),
)
# A base64 body runs on over line breaks (and a YAML block's indent) while the next line is all base64.
BASE64_BODY = Tail(alt(cls(B64_RUN), seq(opt(lit("\r")), lit("\n"), run(WS, 0, 8),
                                         ahead(seq(run(B64, 4, 76), cls("[=\r\n]"))))))  # fmt: skip
# A PEM file base64-encoded whole (kubeconfig's `client-key-data`, a Kubernetes Secret's data): the BEGIN line
PEM_IN_BASE64 = sorted(
    middle
    for label in ("", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ")
    for middle in base64_middles(f"-----BEGIN {label}PRIVATE KEY-----".encode())
)
GITLAB_PREFIXES = ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glimt-", "glagent-", "glsoat-",
                   "glffct-", "gloas-", "GR1348941")  # fmt: skip
NETRC_SPACE = "[ \t\r\n]"
NETRC_WORD = "[^ \t\r\n]"


def _keyed(kind: str, *keys: str, value: Node, tail: Tail) -> Secret:
    """A value under one of `keys` (`key: v`, `key=v`, `"key": "v"`), quoted or not."""
    return Secret(kind, before=seq(not_behind("[A-Za-z0-9_-]"), lit(*keys, ci=True), SEP, opt(cls(QUOTE))),
                  value=value, tail=tail)  # fmt: skip


ARG = "[^\\s'\"`]"  # one character of a command-line argument, as far as the secret goes
LINE_GAP = run("[^\\n;|&]", 0, 80, backtrack=True)  # the rest of one command: its other arguments


COMMAND = "[A-Za-z0-9_./-]"  # a character of a command's name: `mysql` is not the end of `/usr/bin/xmysql`


def _command(*commands: str) -> Node:
    """One of `commands` on a command line, as a whole word."""
    return seq(not_behind(COMMAND), lit(*commands), not_ahead(COMMAND))


def _command_flag(commands: tuple[str, ...], flags: tuple[str, ...], joiner: Node, *, user: bool = False) -> Secret:
    """The argument of one of `flags` given to one of `commands` on its command line (`mysql -u me -pX`); with
    `user`, the argument is `user:password` and the user is kept (`curl -u me:X`)."""
    before = seq(_command(*commands), LINE_GAP, cls(WS), lit(*flags), joiner,
                 opt(cls(QUOTE)), seq(run("[^\\s:'\"]", 1, 48), lit(":")) if user else EMPTY)  # fmt: skip
    return Secret("credential", before=before, value=seq(NOT_PLACEHOLDER, cls(ARG)), tail=Tail(cls(ARG)))


def _option(option: Node, joiner: Node, then: Node = EMPTY) -> Secret:
    """The argument of an `option` of any command (`--password X`, `-storepass X`), after `then` (`pass:`); one
    that starts with `-` is the next option (`--password --other`). Options are written as one word and its
    variants after it, not as a list of words: each word starting with `-` is one more try at every dash."""
    before = seq(not_behind("[^ \\t]"), option, joiner, opt(cls(QUOTE)), then)
    return Secret("credential", before=before, value=seq(NOT_PLACEHOLDER, not_ahead("-"), cls(ARG)),
                  tail=Tail(cls(ARG)))  # fmt: skip


SPACED, ATTACHED_OR_SPACED = run(WS, 1, 3), run(WS, 0, 3)
# `--password`, `--passwd`, `--passphrase` (gpg), and wget's, curl's, ... `--http-password` and the like
PASSWORD_OPTION = seq(lit("--"), opt(lit("http-", "ftp-", "proxy-", "db-")), lit("password", "passwd", "passphrase"))
LONG_FLAG = alt(lit("="), SPACED)  # `--password=X` or `--password X`
MONGO = ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongofiles", "mongostat",
         "mongotop")  # fmt: skip
COMMAND_LINE = (
    # `-pX`, attached (`-p X` asks for the password instead)
    _command_flag(("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mariadb",
                   "mariadb-dump", "mysqlsh"), ("-p",), EMPTY),
    # MongoDB's tools take `-p X` too; `-p` before another option asks for it
    _command_flag(MONGO, ("-p",), alt(seq(SPACED, not_ahead("-")), EMPTY)),
    _command_flag(("curl",), ("-u", "--user", "-U", "--proxy-user"), alt(lit("="), ATTACHED_OR_SPACED), user=True),
    _command_flag(("sshpass",), ("-p",), ATTACHED_OR_SPACED),
    _command_flag(("docker login", "podman login", "buildah login", "skopeo login", "nerdctl login",
                   "helm registry login", "oras login"), ("-p",), ATTACHED_OR_SPACED),
    _command_flag(("redis-cli",), ("-a",), SPACED),
    _command_flag(("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapwhoami"), ("-w",), SPACED),
    _command_flag(("sqlcmd", "bcp"), ("-P",), SPACED),
    _command_flag(("smbclient",), ("-U", "--user"), alt(lit("="), SPACED)),  # `user%password`: both go
    _command_flag(("openssl",), ("-k", "-K"), SPACED),  # `openssl enc -k X`: a password, `-K X`: the key itself
    _command_flag(("zip", "zipcloak", "unzip"), ("-P",), SPACED),
    _command_flag(("7z", "7za", "7zr"), ("-p",), EMPTY),
    # htpasswd's batch mode (`-b`, with other letters) takes the password as its last argument, after a file and a
    # user or (`-n`) a user alone: what follows the flags goes, whichever word the password is
    Secret("credential", before=seq(_command("htpasswd"), LINE_GAP, cls(WS), lit("-"),
                                    run("[A-Za-z]", 0, 8, backtrack=True), lit("b"), run("[A-Za-z]", 0, 8), SPACED),
           value=seq(NOT_PLACEHOLDER, cls(ARG)), tail=Tail(cls("[^\\n;|&]"))),
    # any command's options (`--password-stdin`, `--passphrase-fd`, `-storepass:env` are other options)
    _option(PASSWORD_OPTION, LONG_FLAG),
    # keytool's and jarsigner's `-storepass`, `-keypass`, `-srcstorepass`, `-destkeypass`, ...
    _option(seq(lit("-"), opt(lit("src", "dest")), lit("storepass", "keypass")), SPACED),
    # openssl's `-passin`, `-passout`, `-pass`, `-password` with `pass:X`
    _option(seq(lit("-pass"), opt(lit("in", "out", "word"))), SPACED, then=lit("pass:")),
)  # fmt: skip


SECRETS: tuple[Secret, ...] = (
    Secret("private-key", seq(lit("-----BEGIN "), PEM_LABEL), tail=Tail(PEM_TEXT, closer=PEM_END)),
    Secret("private-key", seq(not_behind(B64), DER_KEY, run(B64, 32, 32)), tail=BASE64_BODY),
    Secret("private-key", lit(*PEM_IN_BASE64), tail=BASE64_BODY),
    _keyed("kubeconfig-key", "client-key-data", "client-certificate-data", value=run(B64_RUN, 16, 16),
           tail=BASE64_BODY),
    _token("aws-access-key", ("AKIA", "ASIA"), "[A-Z0-9]", 16, exact=True),
    Secret("aws-secret-key", before=seq(lit("aws_secret_access_key", "aws-secret-access-key", "aws_secret_key",
                                            "secretaccesskey", "secret_access_key", ci=True), SEP, opt(cls(QUOTE))),
           value=seq(run("[A-Za-z0-9/+]", 40, 40), not_ahead("[A-Za-z0-9/+=]"))),
    _token("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), ALNUM, 30),
    _token("github-token", ("github_pat_",), "[A-Za-z0-9_]", 22),
    _token("anthropic-key", ("sk-ant-",), TOKEN, 20),
    Secret("openai-key", seq(START, lit("sk-"), _digit_within("[A-Za-z_-]"), run(TOKEN, 20, 20)),
           tail=Tail(cls(TOKEN))),
    _token("slack-token", ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"), "[A-Za-z0-9-]", 10),
    _token("google-api-key", ("AIza",), TOKEN, 35),
    _token("huggingface-token", ("hf_", "api_org_"), ALNUM, 34),
    _token("vault-token", ("hvs.", "hvb.", "hvr."), TOKEN, 24),
    _token("digitalocean-token", ("dop_v1_", "doo_v1_", "dor_v1_"), ALNUM, 64),
    _token("age-secret-key", ("AGE-SECRET-KEY-1",), "[A-Z0-9]", 32),
    # `<bot id>:<secret>`, the id five digits or more: the id, public, is kept
    Secret("telegram-bot-token", before=seq(behind("[0-9]", 5), lit(":")), value=seq(lit("A"), run(TOKEN, 32, 32)),
           tail=Tail(cls(TOKEN))),
    # webhook URLs: whoever has one posts as the integration (Slack's path is its secret, Discord's last part)
    Secret("slack-webhook", before=seq(lit("hooks.slack.com/"), lit("services/", "workflows/", "triggers/")),
           value=run("[A-Za-z0-9+/]", 43, 43), tail=Tail(cls("[A-Za-z0-9+/]"))),
    Secret("discord-webhook", before=seq(lit("discord.com/api/", "discordapp.com/api/"),
                                         opt(seq(lit("v"), run("[0-9]", 1, 2), lit("/"))), lit("webhooks/"),
                                         run("[0-9]", 17, 20), lit("/")),
           value=run(TOKEN, 32, 32), tail=Tail(cls(TOKEN))),
    _token("stripe-key", ("sk_live_", "rk_live_"), ALNUM, 16),
    _token("npm-token", ("npm_",), ALNUM, 36, exact=True),
    _token("pypi-token", ("pypi-",), TOKEN, 50),
    Secret("gitlab-token", seq(START, lit(*GITLAB_PREFIXES), run(TOKEN, 20, 20)),
           tail=Tail(alt(cls(TOKEN), seq(lit("."), ahead(cls(TOKEN)))))),  # new tokens end in `.01.<hex>`
    Secret("sendgrid-key", seq(START, lit("SG."), run(TOKEN, 22, 22), lit("."), run(TOKEN, 43, 43), STOP)),
    # Azure's connection strings: storage `AccountKey=`, Service Bus and Event Hubs `SharedAccessKey=`
    Secret("azure-key", before=lit("AccountKey=", "SharedAccessKey=", ci=True), value=run(B64_RUN, 16, 16),
           tail=Tail(cls(B64_RUN))),
    # an Azure shared access signature's `sig=` (a SAS URL, or a connection string's `SharedAccessSignature=`)
    Secret("azure-sas", before=lit("?sig=", "&sig="), value=run(SAS, 16, 16), tail=Tail(cls(SAS))),
    # a docker (or podman) config.json's registry login: base64 of `user:password`
    Secret("docker-auth", before=seq(lit('"auth"'), run(WS, 0, 3), lit(":"), run(WS, 0, 3), lit('"')),
           value=run(B64_RUN, 12, 12), tail=Tail(cls(B64_RUN))),
    # .netrc (curl, git, ftp): `machine h login u password p`, on one line or several
    Secret("netrc-password", before=seq(not_behind("[A-Za-z0-9_-]"),
                                        alt(seq(lit("machine"), run(NETRC_SPACE, 1, 4), run(NETRC_WORD, 1, 60)),
                                            lit("default")),
                                        run(NETRC_SPACE, 1, 4), lit("login"), run(NETRC_SPACE, 1, 4),
                                        run(NETRC_WORD, 1, 48), run(NETRC_SPACE, 1, 4), lit("password"),
                                        run("[ \t]", 1, 4)),
           value=cls(NETRC_WORD), tail=Tail(cls(NETRC_WORD))),
    # header.payload of a JWT (both base64 JSON objects); the rest of the payload and the signature are its tail
    Secret("jwt", seq(START, lit("eyJ"), run(TOKEN, 1, 150), lit(".eyJ")),
           tail=Tail(alt(cls(TOKEN), seq(lit("."), ahead(cls(TOKEN)))))),
    Secret("auth-header", before=seq(lit("authorization", ci=True), opt(cls(QUOTE)), run(WS, 0, 3), cls("[:=]"),
                                     run(WS, 0, 3), opt(cls(QUOTE)),
                                     lit("bearer", "basic", "token", "digest", "bot", ci=True), run(WS, 1, 3)),
           value=run(HEADER_VALUE, 8, 8), tail=Tail(cls(HEADER_VALUE))),
    Secret("auth-header", before=seq(lit("authorization", ci=True), opt(cls(QUOTE)), run(WS, 0, 3), cls("[:=]"),
                                     run(WS, 0, 3), opt(cls(QUOTE))),
           value=seq(_digit_within("[A-Za-z._~+/=-]"), run(HEADER_VALUE, 16, 16)), tail=Tail(cls(HEADER_VALUE))),
    Secret("bearer-token", before=seq(not_behind("[A-Za-z]"), lit("bearer", ci=True), run(WS, 1, 3)),
           value=seq(_digit_within("[A-Za-z._~+/=-]"), run(HEADER_VALUE, 16, 16)), tail=Tail(cls(HEADER_VALUE))),
    *COMMAND_LINE,
    Secret("url-password", before=seq(lit("://"), run("[^\\s:/@]", 0, 64), lit(":")),
           value=run("[^\\s/@]", 1, 100), after=lit("@")),
    # key=value forms: URL query, env file, quoted (JSON, YAML, code), unquoted with a digit (YAML, flags)
    Secret("credential", before=seq(lit("?", "&"), run("[A-Za-z0-9_.-]", 1, 40), lit("="),
                                    ends_with(*(k + "=" for k in KEYWORDS), ci=True)),
           value=seq(not_ahead("[$<{&#]"), cls("[^&#\\s\"'<>(){}]")), tail=Tail(cls("[^&#\\s\"'<>(){}]"))),
    Secret("credential", before=seq(lit(*(k.upper() for k in KEYWORDS)), lit("=")),
           value=run(ENV_VALUE, 1, 128), after=not_ahead("[^\\s\"'`;&|,]")),
    _quoted('"'),
    _quoted("'"),
    Secret("credential", before=seq(KEYWORD, SEP),
           value=seq(_digit_within("[A-Za-z_+/=.~!@#%^*:-]"), run(UNQUOTED, 6, 128)),
           after=not_ahead("[^\\s\"'`,;&)}\\]]")),
)  # fmt: skip


def _entry(index: int, secret: Secret) -> str:
    tail = f"(?P<t{index}>{secret.tail.rx})" if secret.tail else ""
    return f"(?P<s{index}>{secret.before.rx}(?P<v{index}>{secret.value.rx}{tail}){secret.after.rx})"


def _by_first_char(table: tuple[Secret, ...], render: Callable[[int, Secret], str]) -> dict[str, re.Pattern[str]]:
    """One regex per first character: the entries that can start with it, in table order."""
    entries: dict[str, list[str]] = {}
    for index, secret in enumerate(table):
        for char in first_chars(secret.head):
            entries.setdefault(char, []).append(render(index, secret))
    return {char: re.compile("|".join(rxs)) for char, rxs in entries.items()}


class Rules:
    """A table of credential shapes compiled for search, whole (`find`) and on a stream (`prefix`, `opening`)."""

    def __init__(self, table: tuple[Secret, ...]) -> None:
        self.table = table
        self._scan = _by_first_char(table, _entry)  # all entries tried at once: leftmost wins, then the earlier
        self._candidate = re.compile(triggers((s.head for s in table), whole=True))  # where a scan is worth trying
        self.max_hold = max(s.head.reach for s in table)  # the most text a stream holds back
        self.prefix = _by_first_char(table, lambda _, secret: secret.head.prefix)
        self.opening = re.compile(triggers((s.head for s in table), whole=False))  # where `prefix` is worth trying

    def identify(self, match: re.Match[str]) -> tuple[int, Secret]:
        """Which table entry a match of `find` is."""
        index = int((match.lastgroup or "s0")[1:])
        return index, self.table[index]

    def find(self, text: str, pos: int) -> re.Match[str] | None:
        """The next credential from `pos`; trying only where a trigger points is 10 to 100 times faster."""
        while hit := self._candidate.search(text, pos):
            if match := self._scan[text[hit.start()]].match(text, hit.start()):
                return match
            pos = hit.start() + 1
        return None

    def redact(self, text: str, offset: int = 0) -> tuple[str, list[Finding]]:
        """`text` redacted by these rules, with what was replaced (its positions counted from `offset`)."""
        parts: list[str] = []
        findings: list[Finding] = []
        pos = 0
        while match := self.find(text, pos):
            replaced, found, end = self.replace(text, match, offset)
            parts += (text[pos : match.start()], replaced, text[end : match.end()])
            findings += found
            pos = match.end()
        parts.append(text[pos:])
        return "".join(parts), findings

    def replace(self, text: str, match: re.Match[str], offset: int = 0) -> tuple[str, list[Finding], int]:
        """What a match of `find` becomes up to the end of its value, the findings in it, and where the value ends.

        The text the match keeps before its value is redacted on its own: a command line's other arguments may
        hold credentials too (`curl -H "Authorization: Bearer X" -u me:Y`, `openssl -passin pass:X -k Y`)."""
        index, secret = self.identify(match)
        start, end = match.span(f"v{index}")
        kept, findings = self.redact(text[match.start() : start], offset + match.start())
        return kept + secret.marker, [*findings, Finding(secret.kind, offset + start, offset + end)], end


SECRET_KEY = re.compile(rf"[\w.-]*{KEYWORD.rx}|(?i:authorization|proxy-authorization|cookie|set-cookie)")
TABLE = Rules(SECRETS)
# Every later table holds SECRETS and more text per entry than a stream may hold back: no more than this.
MAX_HOLD = TABLE.max_hold
_active = TABLE


def active() -> Rules:
    """The rules in force: the table, and the process's own secrets once `known.remember_secrets` has run."""
    return _active


def use(rules: Rules) -> None:
    """Puts `rules` in force for the whole process (each redaction, stream and log record from now on)."""
    global _active
    if rules.max_hold > MAX_HOLD:
        raise ValueError(f"rules that hold back {rules.max_hold} characters, past the table's {MAX_HOLD}")
    _active = rules


def redact(text: str) -> tuple[str, list[Finding]]:
    """`text` with every credential value replaced by `[REDACTED:<kind>]`, and what was replaced."""
    return _active.redact(text)


def redact_value(value: Any) -> Any:
    """A copy of JSON-like data with every string redacted; a string under a credential-named key goes whole."""
    if isinstance(value, str):
        return redact(value)[0]
    if isinstance(value, dict):
        return {key: redact_item(key, item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(item) for item in value)
    return value


def redact_item(key: Any, item: Any) -> Any:
    """A JSON object's item (`key` None: a list's), as `redact_value` keeps it: a string under a credential-named
    key goes whole."""
    if isinstance(key, str) and isinstance(item, str) and item and SECRET_KEY.fullmatch(key):
        return "[REDACTED:credential]"
    return redact_value(item)


class RedactingFilter(logging.Filter):
    """A logging filter (attach it to handlers) that redacts the message, its arguments and any traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            record.msg, record.args = redact(record.getMessage())[0], None
        except Exception:  # a broken format string: logging reports it, with redacted parts
            record.msg, record.args = redact(str(record.msg))[0], redact_value(record.args)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)[0]
        record.exc_info = None  # every formatter then shows the redacted exc_text, never the traceback anew
        if record.stack_info:
            record.stack_info = redact(record.stack_info)[0]
        return True
