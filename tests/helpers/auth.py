"""The callers and keys of the auth tests' agent, and the headers a caller presents its key in."""

ORCHESTRATOR_KEY = "orchestrator-key-5f2c1e"
CI_KEY = "ci-key-9a7b3d"
KEYS = {"ORCHESTRATOR_KEY": ORCHESTRATOR_KEY, "CI_AGENT_KEY": CI_KEY}
AUTH = {
    "callers": [
        {"name": "orchestrator", "key_env": "ORCHESTRATOR_KEY"},
        {"name": "ci", "key_env": "CI_AGENT_KEY"},
    ]
}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def api_key(key: str) -> dict[str, str]:
    return {"X-API-Key": key}
