"""The guard's sample credentials (fake, of the real shapes), its marker, and the tables the redaction tests share:
what is redacted, what is kept, the gutters of numbered listings, a megabyte of adversarial text per entry."""

from collections.abc import Callable

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
GITLAB = "glpat-" + "xK9vPq2LmN4rTz7WbY1c"
GITLAB_RUNNER = "glrt-" + "t1_AbCdEfGhIjKlMnOpQrStUv.01.1a2b3c4d5"
SENDGRID = "SG." + "ngeVfQFYQlKU0ufo8x5d1A" + ".TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
DOCKER_AUTH = "b2N0b2NhdDpnaHBfc2VjcmV0MTIz"  # base64 of octocat:ghp_secret123
KUBE_KEY_DATA = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVBMFozVlM1SkpjZHMzeGZuL3lnV3lGOFBi"
ED25519_DER = "MC4CAQAwBQYDK2VwBCIEIDeadBeefDeadBeefDeadBeefDeadBeefDeadBeefDea"
HUGGINGFACE = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
SLACK_WEBHOOK = "T0A1B2C3D/B0E1F2G3H/" + "AbCdEfGhIjKlMnOpQrStUvWx"
DISCORD_WEBHOOK = "112233445566778899/" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv-Wx_YzAb1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0"
TELEGRAM = "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
VAULT = "hvs." + "CAESIJlWh2Pxe0RnlwPpY4dS2JdGZlJTn6e0pqsoTNazLMvQGh4KHGh2cy5CcEhGdzlHWUt1SmFnVDNQaURTa0l0bEI"
DIGITALOCEAN = "dop_v1_" + "0123456789abcdef" * 4
AZURE_SAS_SIG = "Yd3JbNlMgPxX%2BTq8zK0vWm1sR7cA9eH4uF6iL2oB5nE%3D"
AGE = "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE"


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

# Formats each a table entry of its own: a real shape each, in the context it is found in.
REDACTED += [
    (f"GITLAB_TOKEN {GITLAB} set", f"GITLAB_TOKEN {marker('gitlab-token')} set"),
    (f"runner {GITLAB_RUNNER}.", f"runner {marker('gitlab-token')}."),
    (f"SENDGRID {SENDGRID}\n", f"SENDGRID {marker('sendgrid-key')}\n"),
    (
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={marker('azure-key')};"
        "EndpointSuffix=core.windows.net",
    ),
    (
        f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={AZURE_KEY[:44]}",
        f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={marker('azure-key')}",
    ),
    (
        f'{{"auths": {{"ghcr.io": {{"auth": "{DOCKER_AUTH}"}}}}}}',
        f'{{"auths": {{"ghcr.io": {{"auth": "{marker("docker-auth")}"}}}}}}',
    ),
    (
        "machine github.com login octocat password hunter2x9\n",
        f"machine github.com login octocat password {marker('netrc-password')}\n",
    ),
    (
        "machine api.example.com\n  login me\n  password s3cr3t!\ndefault login anonymous password me@x\n",
        f"machine api.example.com\n  login me\n  password {marker('netrc-password')}\n"
        f"default login anonymous password {marker('netrc-password')}\n",
    ),
    (
        f"users:\n- name: admin\n  user:\n    client-key-data: {KUBE_KEY_DATA}\n    token: abcdef.0123456789abcdef\n",
        f"users:\n- name: admin\n  user:\n    client-key-data: {marker('kubeconfig-key')}\n"
        f"    token: {marker('credential')}\n",
    ),
    (
        f'{{"client-certificate-data": "{KUBE_KEY_DATA[:60]}"}}',
        f'{{"client-certificate-data": "{marker("kubeconfig-key")}"}}',
    ),
    # a key base64-encoded whole (a Kubernetes Secret's data), and PEM bodies without their BEGIN line
    (f"tls.key: {KUBE_KEY_DATA}", f"tls.key: {marker('private-key')}"),
    (PEM_BODY + "-----END RSA PRIVATE KEY-----", f"{marker('private-key')}\n-----END RSA PRIVATE KEY-----"),
    ("\n".join(OPENSSH[1:]), f"{marker('private-key')}\n{OPENSSH[-1]}"),
    (f"key: |\n  {ED25519_DER}\n  QUJD\nnext: 1", f"key: |\n  {marker('private-key')}\nnext: 1"),
    ("MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5dSLXGfaZ3xCVoAoGCCqGSM49AwEHoUQDQgAE", marker("private-key")),
    # credentials on command lines (shell tool calls, as the audit and the log record them)
    ("mysql -u root -phunter2 db", f"mysql -u root -p{marker('credential')} db"),
    ("mysqldump --password hunter42 db", f"mysqldump --password {marker('credential')} db"),
    ("curl -u admin:s3cret https://x", f"curl -u admin:{marker('credential')} https://x"),
    ("curl -s --user=admin:s3cret https://x", f"curl -s --user=admin:{marker('credential')} https://x"),
    ("sshpass -p s3cret ssh host", f"sshpass -p {marker('credential')} ssh host"),
    ("docker login -u me -p s3cret ghcr.io", f"docker login -u me -p {marker('credential')} ghcr.io"),
    ("docker login --password=s3cret ghcr.io", f"docker login --password={marker('credential')} ghcr.io"),
    ("wget --http-password s3cret https://x", f"wget --http-password {marker('credential')} https://x"),
    ("redis-cli -h db -a s3cret ping", f"redis-cli -h db -a {marker('credential')} ping"),
    ("ldapsearch -x -D cn=admin -w s3cret", f"ldapsearch -x -D cn=admin -w {marker('credential')}"),
    ("psql postgres://app:s3cret@db:5432/app", f"psql postgres://app:{marker('url-password')}@db:5432/app"),
    ("mongosh -u admin -p s3cret --host db", f"mongosh -u admin -p {marker('credential')} --host db"),
    ("mongodump -u admin -ps3cret", f"mongodump -u admin -p{marker('credential')}"),
    (
        "openssl pkcs12 -export -in c.pem -passin pass:s3cret -passout 'pass:0ther' -out c.p12",
        f"openssl pkcs12 -export -in c.pem -passin pass:{marker('credential')} -passout 'pass:{marker('credential')}'"
        " -out c.p12",
    ),
    ("openssl enc -aes-256-cbc -k s3cret -in f", f"openssl enc -aes-256-cbc -k {marker('credential')} -in f"),
    ("gpg --batch --passphrase s3cret -d f.gpg", f"gpg --batch --passphrase {marker('credential')} -d f.gpg"),
    (
        "keytool -importkeystore -srcstorepass s3cret -deststorepass 0ther -keypass 3rd",
        f"keytool -importkeystore -srcstorepass {marker('credential')} -deststorepass {marker('credential')}"
        f" -keypass {marker('credential')}",
    ),
    ("htpasswd -bc /etc/nginx/.htpasswd admin s3cret", f"htpasswd -bc {marker('credential')}"),
    ("htpasswd -nbB admin s3cret\nok", f"htpasswd -nbB {marker('credential')}\nok"),
    ("zip -P s3cret out.zip f.txt; ls", f"zip -P {marker('credential')} out.zip f.txt; ls"),
    ("7z a -ps3cret out.7z f.txt", f"7z a -p{marker('credential')} out.7z f.txt"),
    # a credential among a command's other arguments, before the one its entry is anchored on
    (
        'curl -H "Authorization: Bearer abcdef1234567890abcdef" -u me:s3cret https://x',
        f'curl -H "Authorization: Bearer {marker("auth-header")}" -u me:{marker("credential")} https://x',
    ),
    (f"mysql -h {GITHUB} -ps3cret db", f"mysql -h {marker('github-token')} -p{marker('credential')} db"),
]

# Vendor formats found by their prefix: the shape gitleaks gives, at least as long, in a wider alphabet (a value
# glued to more text, cut short past the minimum, or of another alphabet than documented still goes).
REDACTED += [
    (f"HF_TOKEN_FILE has {HUGGINGFACE}\n", f"HF_TOKEN_FILE has {marker('huggingface-token')}\n"),
    (
        f"curl -d @m.json https://hooks.slack.com/services/{SLACK_WEBHOOK}",
        f"curl -d @m.json https://hooks.slack.com/services/{marker('slack-webhook')}",
    ),
    (
        f"https://discord.com/api/webhooks/{DISCORD_WEBHOOK}?wait=true",
        f"https://discord.com/api/webhooks/{DISCORD_WEBHOOK.split('/')[0]}/{marker('discord-webhook')}?wait=true",
    ),
    (
        f"https://api.telegram.org/bot{TELEGRAM}/getMe",
        f"https://api.telegram.org/bot{TELEGRAM.split(':')[0]}:{marker('telegram-bot-token')}/getMe",
    ),
    (f"vault login {VAULT}", f"vault login {marker('vault-token')}"),
    (f'"token": "{DIGITALOCEAN}"', f'"token": "{marker("credential")}"'),  # the key's name decides first
    (f"doctl auth init -t {DIGITALOCEAN}", f"doctl auth init -t {marker('digitalocean-token')}"),
    (
        f"https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sr=b&sp=r&sig={AZURE_SAS_SIG}",
        f"https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sr=b&sp=r&sig={marker('azure-sas')}",
    ),
    (f"# created: 2024\n{AGE}\n", f"# created: 2024\n{marker('age-secret-key')}\n"),
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
    # near misses of the formats above: a prefix without its token, a placeholder, a public key or certificate
    "glpat-short and gldt- are GitLab's prefixes",
    "SG.abc.def is too short for a SendGrid key",
    "AccountKey=<your key>;AccountName=x",
    '{"auth": "oauth", "authType": "basic"}',
    "the machine learning model's default password policy",
    "client-key-data: ${KUBE_CLIENT_KEY}",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIJAKxyz0123456789abcdefghijklmnopqrstuvwxyzABCDEFG\n"
    "-----END CERTIFICATE-----",
    "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0",
    "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=",
    "mysql -u root -p db",
    "mkdir -p build && ssh -p 2222 host",
    "curl -u admin https://x",
    "docker run -u 1000:1000 img",
    "git push -u origin main",
    "sshpass -f ~/.pw ssh host",
    "docker login --password-stdin ghcr.io",
    'docker login -u me -p "$REGISTRY_PASSWORD" ghcr.io',
    "mysql --password-file=/run/secrets/db",
    # near misses of the vendor formats: a prefix alone or cut short, a placeholder, an identifier
    "AIzaSyA1234567890abcdefghijklmnopqrst is one character short",
    "from huggingface_hub import hf_hub_download; hf_abcdefghijklmnopqrstuvwxyz012345",
    "post to https://hooks.slack.com/services/T000/B000/XXXX",
    "https://discord.com/api/webhooks/{webhook.id}/{webhook.token}",
    "src/app.py:12:ASYNC_DATABASE_CONNECTION_POOL_SIZE_DEFAULT = 5",
    "at 12:30 and 10234:Ab, also https://api.telegram.org/bot<token>/getMe",
    "hvs.example and hvb.short are Vault's prefixes",
    "dop_v1_" + "0123456789abcdef" * 3 + "0123456789abcde",
    "https://acct.blob.core.windows.net/c?sig=abc&sig=${SAS_SIGNATURE}",
    "age-keygen prints AGE-SECRET-KEY-1... to the key file",
    "mongosh -u admin -p --host db",
    "openssl rsa -in k.pem -passin env:KEY_PASS -passout file:pw.txt",
    "openssl enc -d -kfile pw.txt -in f",
    "gpg --passphrase-fd 0 --batch -d f.gpg",
    "keytool -list -storepass:env STOREPASS",
    "htpasswd -B -c /etc/nginx/.htpasswd admin",
    "zip -r out.zip dir && unzip -l out.zip",
]


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
    "bot ids": "12345:A" * 150_000,
    "bot ids and cut tokens": ("123456:A" + "b" * 31 + " ") * 25_000,
    "openssl passes": "-passin pass:" * 80_000,
    "batch flags": "htpasswd -b" * 90_000,
    "command gaps": ("curl -H 'Authorization: Bearer " + "a1" * 20 + "' -u a:") * 12_000,
    "webhook paths": "https://discord.com/api/webhooks/123456789012345678/" * 20_000,
}
