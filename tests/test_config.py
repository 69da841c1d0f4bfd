"""The agent config: errors that name file, key and value; precedence; `${VAR}`; paths; Node a2a-opencode configs."""

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from a2a_wrapper.config.files import load_config
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import ConfigError

NODE_CONFIG = Path(__file__).parent / "fixtures" / "node-a2a-opencode.json"
CARD = {"name": "Reviewer"}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No stray A2A_WRAP_* variables; default state folders land in tmp_path."""
    for name in list(os.environ):
        if name.startswith("A2A_WRAP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))


def write(folder: Path, data: dict[str, Any], name: str = "agent.yaml") -> Path:
    path = folder / name
    path.write_text(json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data), encoding="utf-8")
    return path


def error_of(path: Path, overrides: dict[str, Any] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(path, overrides)
    return str(caught.value)


# --- errors name the file, the dotted key and the value ---------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "key", "value"),
    [
        ({"card": CARD, "colour": "blue"}, "colour", "'blue'"),
        ({"card": {**CARD, "homepage": "https://x.test"}}, "card.homepage", "'https://x.test'"),
        ({"card": {**CARD, "skills": [{"id": "r", "name": "R", "weight": 3}]}}, "card.skills.0.weight", "3"),
        ({"card": CARD, "server": {"hots": "0.0.0.0"}}, "server.hots", "'0.0.0.0'"),
        ({"card": CARD, "backend": {"kind": "opencode", "modle": "a/b"}}, "backend.modle", "'a/b'"),
        (
            {"card": CARD, "backend": {"provider": {"id": "p", "base_url": "http://x/v1", "models": ["m"], "key": 1}}},
            "backend.provider.key",
            "1",
        ),
        ({"card": CARD, "sessions": {"ttl_ms": 5}}, "sessions.ttl_ms", "5"),
        ({"card": CARD, "logging": {"colour": "always"}}, "logging.colour", "'always'"),
    ],
    ids=["top", "card", "skill", "server", "backend", "provider", "sessions", "logging"],
)
def test_an_unknown_key_is_named_with_its_value_and_file(
    tmp_path: Path, data: dict[str, Any], key: str, value: str
) -> None:
    path = write(tmp_path, data)
    message = error_of(path)
    assert f"{path}: {key}: unknown key" in message
    assert value in message


@pytest.mark.parametrize(
    ("section", "key", "shown"),
    [
        ({"server": {"port": 70000}}, "server.port", "70000"),
        ({"server": {"port": -1}}, "server.port", "-1"),
        ({"server": {"port": "eighty"}}, "server.port", "'eighty'"),
        ({"server": {"advertise_url": "ftp://example.com"}}, "server.advertise_url", "'ftp://example.com'"),
        ({"server": {"advertiseUrl": "localhost:8000"}}, "server.advertise_url", "'localhost:8000'"),
        ({"backend": {"model": "gpt-4o"}}, "backend.model", "'gpt-4o'"),
        ({"backend": {"kind": "docker"}}, "backend", "{'kind': 'docker'}"),
        ({"backend": {"system_prompt_mode": "prepend"}}, "backend.system_prompt_mode", "'prepend'"),
        ({"backend": {"startup_timeout": "soon"}}, "backend.startup_timeout", "'soon'"),
        (
            {"backend": {"provider": {"id": "p", "base_url": "localhost:1234", "models": ["m"]}}},
            "backend.provider.base_url",
            "'localhost:1234'",
        ),
        ({"logging": {"level": "LOUD"}}, "logging.level", "'LOUD'"),
        ({"sessions": {"ttl": -5}}, "sessions.ttl", "-5"),
        ({"sessions": {"max_count": 0}}, "sessions.max_count", "0"),
        ({"timeouts": {"turn": 0}}, "timeouts.turn", "0"),
        ({"auto_approve": "maybe"}, "auto_approve", "'maybe'"),
        ({"card": {**CARD, "skills": "review"}}, "card.skills", "'review'"),
        ({"card": {"name": ""}}, "card.name", "''"),
    ],
)
def test_a_bad_value_is_named_with_its_key_and_file(
    tmp_path: Path, section: dict[str, Any], key: str, shown: str
) -> None:
    path = write(tmp_path, {"card": CARD, **section})
    message = error_of(path)
    assert f"{path}: {key}: " in message
    assert f"(got {shown}" in message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, {"card": CARD, "server": {"port": 70000}, "logging": {"level": "LOUD"}})
    lines = error_of(path).splitlines()
    assert len(lines) == 2
    assert all(line.startswith(f"{path}: ") for line in lines)


def test_a_missing_card_name_is_named(tmp_path: Path) -> None:
    assert f"{write(tmp_path, {'card': {}})}: card.name: Field required" in error_of(tmp_path / "agent.yaml")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("agent.yaml", "card: [unclosed", "not valid YAML"),
        ("agent.json", '{"card": ', "not valid JSON"),
        ("agent.yaml", "- card\n- server\n", "the top level must be a mapping"),
        ("agent.yaml", "card: {name: R}\n8000: port\n", "8000: unknown key"),
    ],
)
def test_an_unreadable_file_is_named(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    message = error_of(path)
    assert message.startswith(f"{path}: ")
    assert expected in message


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    assert error_of(tmp_path / "nope.yaml").startswith(f"{tmp_path / 'nope.yaml'}: cannot read the config file")


# --- defaults, YAML and JSON, both spellings ------------------------------------------------------------------------


def test_a_minimal_config_gets_the_documented_defaults(tmp_path: Path) -> None:
    settings = load_config(write(tmp_path, {"card": CARD}))
    assert (settings.server.host, settings.server.port) == ("127.0.0.1", 8000)
    assert settings.advertised_url == "http://127.0.0.1:8000"
    assert settings.backend.kind == "opencode"
    assert settings.backend.model == "offline/offline-model"
    assert settings.backend.workdir == tmp_path / "workspace"
    assert (settings.sessions.ttl, settings.sessions.max_count, settings.timeouts.turn) == (3600, 1000, 600)
    assert settings.logging.level == "INFO"
    assert settings.auto_approve is False


def test_backend_kind_may_be_left_out(tmp_path: Path) -> None:
    settings = load_config(write(tmp_path, {"card": CARD, "backend": {"model": "anthropic/claude-sonnet-4-5"}}))
    assert (settings.backend.kind, settings.backend.model) == ("opencode", "anthropic/claude-sonnet-4-5")


def test_sessions_ttl_zero_is_allowed(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, {"card": CARD, "sessions": {"ttl": 0}})).sessions.ttl == 0


FULL = {
    "card": {
        "name": "Reviewer",
        "description": "Reviews code.",
        "version": "2.0.0",
        "skills": [{"id": "review", "name": "Review", "tags": ["review", "code-review"]}],
        "default_input_modes": ["text/plain"],
        "default_output_modes": ["text/markdown"],
        "provider": {"organization": "Example Org", "url": "https://example.org"},
    },
    "server": {"host": "0.0.0.0", "port": 8100, "advertise_url": "https://agents.example.com/reviewer/"},
    "backend": {
        "kind": "opencode",
        "model": "offline/offline-model",
        "system_prompt": "Review.",
        "system_prompt_mode": "replace",
        "provider": {"id": "offline", "base_url": "http://127.0.0.1:8765/v1", "models": ["offline-model"]},
    },
    "sessions": {"ttl": 0, "max_count": 10},
    "timeouts": {"turn": 120},
    "logging": {"level": "warn"},
    "auto_approve": True,
}


@pytest.mark.parametrize("name", ["agent.yaml", "agent.yml", "agent.json"])
def test_yaml_and_json_load_the_same(tmp_path: Path, name: str) -> None:
    settings = load_config(write(tmp_path, FULL, name))
    assert settings.card.skills[0].tags == ["review", "code-review"]
    assert settings.card.provider is not None and settings.card.provider.organization == "Example Org"
    assert settings.advertised_url == "https://agents.example.com/reviewer"
    assert (settings.backend.system_prompt, settings.backend.system_prompt_mode) == ("Review.", "replace")
    assert (settings.sessions.ttl, settings.sessions.max_count, settings.timeouts.turn) == (0, 10, 120)
    assert settings.logging.level == "WARNING"
    assert settings.auto_approve is True


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {_camel_key(k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


def test_camel_case_and_snake_case_keys_are_the_same_config(tmp_path: Path) -> None:
    camel = _camel({**FULL, "state_dir": "state"})
    assert "autoApprove" in camel and "advertiseUrl" in camel["server"] and "systemPromptMode" in camel["backend"]
    snake_dir, camel_dir = tmp_path / "snake", tmp_path / "camel"
    snake_dir.mkdir()
    camel_dir.mkdir()
    snake = load_config(write(snake_dir, {**FULL, "state_dir": "state"}))
    from_camel = load_config(write(camel_dir, camel))
    assert from_camel.model_dump(exclude={"state_dir", "backend"}) == snake.model_dump(exclude={"state_dir", "backend"})
    assert from_camel.backend.system_prompt_mode == "replace"
    assert from_camel.state_dir == camel_dir / "state"


# --- precedence: defaults < file < environment < CLI flags -----------------------------------------------------------


def test_environment_beats_the_file_and_keeps_its_siblings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, {"card": CARD, "server": {"host": "0.0.0.0", "port": 8100}, "auto_approve": False})
    monkeypatch.setenv("A2A_WRAP_SERVER__PORT", "9100")
    monkeypatch.setenv("A2A_WRAP_AUTO_APPROVE", "true")
    settings = load_config(path)
    assert (settings.server.host, settings.server.port) == ("0.0.0.0", 9100)
    assert settings.auto_approve is True


@pytest.mark.parametrize(
    "file",
    [
        {"server": {"advertise_url": "https://file.example.com"}, "auto_approve": False, "state_dir": "file"},
        {"server": {"advertiseUrl": "https://file.example.com"}, "autoApprove": False, "stateDir": "file"},
    ],
    ids=["snake", "camel"],
)
def test_environment_beats_either_spelling_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file: dict[str, Any]
) -> None:
    monkeypatch.setenv("A2A_WRAP_SERVER__ADVERTISE_URL", "https://env.example.com")
    monkeypatch.setenv("A2A_WRAP_AUTO_APPROVE", "true")
    monkeypatch.setenv("A2A_WRAP_STATE_DIR", str(tmp_path / "env"))
    settings = load_config(write(tmp_path, {"card": CARD, **file}))
    assert (settings.advertised_url, settings.auto_approve) == ("https://env.example.com", True)
    assert settings.state_dir == tmp_path / "env"


def test_cli_overrides_beat_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, {"card": CARD, "server": {"host": "0.0.0.0", "port": 8100}, "logging": {"level": "ERROR"}})
    monkeypatch.setenv("A2A_WRAP_SERVER__PORT", "9100")
    monkeypatch.setenv("A2A_WRAP_LOGGING__LEVEL", "INFO")
    settings = load_config(path, {"server": {"port": 9200}, "logging": {"level": "DEBUG"}})
    assert (settings.server.host, settings.server.port) == ("0.0.0.0", 9200)
    assert settings.logging.level == "DEBUG"


def test_a_cli_state_dir_beats_file_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_WRAP_STATE_DIR", str(tmp_path / "env"))
    path = write(tmp_path, {"card": CARD, "stateDir": "from-file"})
    assert load_config(path, {"state_dir": tmp_path / "cli"}).state_dir == tmp_path / "cli"


@pytest.mark.parametrize(
    ("variable", "value", "read"),
    [
        ("A2A_WRAP_SERVER__ADVERTISE_URL", "https://a.example.com", lambda s: s.advertised_url),
        ("A2A_WRAP_BACKEND__MODEL", "openai/gpt-5", lambda s: s.backend.model),
        ("A2A_WRAP_BACKEND__PROVIDER__API_KEY", "sk-env", lambda s: s.backend.provider.api_key.get_secret_value()),
        ("A2A_WRAP_SESSIONS__TTL", "0", lambda s: str(int(s.sessions.ttl))),
        ("A2A_WRAP_CARD__NAME", "From Env", lambda s: s.card.name),
    ],
)
def test_nested_environment_variables_reach_their_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, read: Any
) -> None:
    provider = {"id": "p", "base_url": "http://127.0.0.1:1/v1", "api_key": "sk-file", "models": ["m"]}
    path = write(tmp_path, {"card": CARD, "backend": {"kind": "opencode", "provider": provider}})
    monkeypatch.setenv(variable, value)
    assert read(load_config(path)) == value


def test_a_backend_key_from_the_environment_needs_no_backend_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WRAP_BACKEND__MODEL", "openai/gpt-5")
    assert load_config(write(tmp_path, {"card": CARD})).backend.model == "openai/gpt-5"


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("A2A_WRAP_SERVER__PORT", "notaport", "server.port: "),
        ("A2A_WRAP_SERVER__BOGUS", "1", "server.bogus: unknown key"),
        ("A2A_WRAP_CARD__SKILLS", "[oops", "card"),
    ],
)
def test_a_bad_environment_value_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    message = error_of(write(tmp_path, {"card": CARD}))
    assert expected in message
    assert value in message or "Expecting value" in message
    assert message.startswith(f"environment variable {variable}"), message  # the variable, not the file, is wrong


def test_a_bad_flag_value_names_the_flag(tmp_path: Path) -> None:
    path = write(tmp_path, {"card": CARD, "server": {"port": 9100}})
    with pytest.raises(ConfigError) as caught:
        load_config(path, {"server": {"port": 99999}}, {"server.port": "--port"})
    assert str(caught.value).startswith(f"flag --port for {path}: server.port: "), caught.value


def test_a_value_from_the_file_names_the_file_even_with_a_flag_elsewhere(tmp_path: Path) -> None:
    path = write(tmp_path, {"card": CARD, "server": {"host": 7}})
    with pytest.raises(ConfigError) as caught:
        load_config(path, {"server": {"port": 9200}}, {"server.port": "--port"})
    assert str(caught.value).startswith(f"{path}: server.host: "), caught.value


# --- ${VAR} substitution --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "environment", "expected"),
    [
        ("${REVIEW_TEAM}", {"REVIEW_TEAM": "platform"}, "platform"),
        (
            "Reviews for ${REVIEW_TEAM} and ${REVIEW_ORG}",
            {"REVIEW_TEAM": "a", "REVIEW_ORG": "b"},
            "Reviews for a and b",
        ),
        ("${REVIEW_TEAM:-everyone}", {}, "everyone"),
        ("${REVIEW_TEAM:-everyone}", {"REVIEW_TEAM": "platform"}, "platform"),
        ("${REVIEW_TEAM:-everyone}", {"REVIEW_TEAM": ""}, "everyone"),
        ("${REVIEW_TEAM:-}", {}, ""),
        ("${REVIEW_TEAM}", {"REVIEW_TEAM": ""}, ""),
        ("no variables $HOME {here}", {}, "no variables $HOME {here}"),
    ],
)
def test_variables_are_substituted_in_strings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template: str, environment: dict[str, str], expected: str
) -> None:
    monkeypatch.delenv("REVIEW_TEAM", raising=False)
    monkeypatch.delenv("REVIEW_ORG", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    settings = load_config(write(tmp_path, {"card": {**CARD, "description": template}}))
    assert settings.card.description == expected


def test_substituted_values_are_validated_as_their_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, {"card": CARD, "server": {"port": "${REVIEW_PORT}"}})
    monkeypatch.setenv("REVIEW_PORT", "9300")
    assert load_config(path).server.port == 9300
    monkeypatch.setenv("REVIEW_PORT", "ninety")
    assert "server.port: " in error_of(path) and "'ninety'" in error_of(path)


def test_a_variable_in_a_list_is_substituted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEW_TAG", "security")
    skills = [{"id": "r", "name": "R", "tags": ["review", "${REVIEW_TAG}"]}]
    assert load_config(write(tmp_path, {"card": {**CARD, "skills": skills}})).card.skills[0].tags[1] == "security"


def test_an_unset_variable_without_default_names_key_and_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REVIEW_API_KEY", raising=False)
    provider = {"id": "p", "base_url": "http://127.0.0.1:1/v1", "api_key": "${REVIEW_API_KEY}", "models": ["m"]}
    path = write(tmp_path, {"card": CARD, "backend": {"provider": provider}})
    message = error_of(path)
    assert message.startswith(f"{path}: backend.provider.api_key: ")
    assert "REVIEW_API_KEY is not set" in message


# --- paths ----------------------------------------------------------------------------------------------------------


def test_relative_paths_are_relative_to_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "agents" / "reviewer"
    folder.mkdir(parents=True)
    (folder / "prompts").mkdir()
    (folder / "prompts" / "review.md").write_text("Review carefully.\n")
    backend = {"workdir": "repo", "system_prompt_file": "prompts/review.md", "binary": "bin/opencode"}
    path = write(folder, {"card": CARD, "backend": backend, "state_dir": "../state"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    settings = load_config(Path(os.path.relpath(path, elsewhere)))
    assert settings.backend.workdir == folder / "repo"
    assert settings.backend.system_prompt_file == folder / "prompts" / "review.md"
    assert settings.backend.system_prompt == "Review carefully.\n"
    assert settings.backend.binary == folder / "bin" / "opencode"
    assert settings.state_dir == tmp_path / "agents" / "state"


def test_absolute_paths_are_kept(tmp_path: Path) -> None:
    folder = tmp_path / "config"
    folder.mkdir()
    data = {"card": CARD, "backend": {"workdir": str(tmp_path / "w")}, "state_dir": str(tmp_path / "s")}
    settings = load_config(write(folder, data))
    assert (settings.backend.workdir, settings.state_dir) == (tmp_path / "w", tmp_path / "s")


def test_a_missing_system_prompt_file_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, {"card": CARD, "backend": {"system_prompt_file": "missing.md"}})
    message = error_of(path)
    assert message.startswith(f"{path}: backend.system_prompt_file: ")
    assert str(tmp_path / "missing.md") in message


@pytest.mark.parametrize(
    ("name", "slug"), [("Reviewer", "reviewer"), ("Code Review!", "code-review"), ("***", "agent")]
)
def test_the_default_state_dir_is_per_agent(tmp_path: Path, name: str, slug: str) -> None:
    settings = load_config(write(tmp_path, {"card": {"name": name}}))
    assert settings.state_dir == tmp_path / "xdg-state" / "a2a-wrapper" / slug


# --- the advertised URL and secrets ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "url"),
    [
        ({}, "http://127.0.0.1:8000"),
        ({"host": "0.0.0.0", "port": 9000}, "http://127.0.0.1:9000"),
        ({"host": "reviewer.internal"}, "http://reviewer.internal:8000"),
        ({"host": "::1", "port": 9000}, "http://[::1]:9000"),
        ({"advertise_url": "https://agents.example.com/reviewer/"}, "https://agents.example.com/reviewer"),
    ],
)
def test_the_advertised_url(tmp_path: Path, server: dict[str, Any], url: str) -> None:
    assert load_config(write(tmp_path, {"card": CARD, "server": server})).advertised_url == url


def test_secrets_never_appear_in_dumps(tmp_path: Path) -> None:
    provider = {"id": "p", "base_url": "http://127.0.0.1:1/v1", "api_key": "sk-do-not-print", "models": ["m"]}
    path = write(tmp_path, {"card": CARD, "backend": {"password": "hunter2-secret", "provider": provider}})
    settings = load_config(path)
    for shown in (json.dumps(settings.model_dump(mode="json")), settings.model_dump_json(), repr(settings)):
        assert "sk-do-not-print" not in shown and "hunter2-secret" not in shown
    dumped = settings.model_dump(mode="json")["backend"]
    assert dumped["password"] == dumped["provider"]["api_key"] == "**********"
    assert settings.backend.provider is not None
    assert settings.backend.provider.api_key.get_secret_value() == "sk-do-not-print"


def test_a_settings_object_survives_a_python_dump(tmp_path: Path) -> None:
    provider = {"id": "p", "base_url": "http://127.0.0.1:1/v1", "api_key": "sk-keep", "models": ["m"]}
    settings = load_config(write(tmp_path, {"card": CARD, "backend": {"provider": provider}}))
    again = AgentSettings.model_validate(settings.model_dump())
    assert again.backend.provider is not None and again.backend.provider.api_key.get_secret_value() == "sk-keep"


# --- configs written for the Node a2a-opencode wrapper --------------------------------------------------------------


def test_the_node_example_config_loads_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="a2a_wrapper.config.node"):
        settings = load_config(NODE_CONFIG)
    assert settings.card.name == "Example Agent"
    assert settings.card.version == "1.0.0"
    assert settings.card.default_input_modes == settings.card.default_output_modes == ["text/plain"]
    assert [skill.id for skill in settings.card.skills] == ["general-assistant"]
    assert settings.card.skills[0].tags == ["general", "qa", "reasoning", "assistant"]
    assert (settings.server.host, settings.server.port) == ("0.0.0.0", 3000)
    assert settings.advertised_url == "http://localhost:3000"
    backend = settings.backend
    assert backend.kind == "opencode"
    assert backend.base_url == "http://localhost:4097"
    assert backend.workdir == Path("/Users/gss/Views/open-code-projects/mcp-test")
    assert backend.model == "github-copilot/claude-sonnet-4.5"
    assert backend.agent == "general"
    assert (backend.system_prompt, backend.system_prompt_mode) == ("You are a helpful assistant.", "replace")
    assert settings.auto_approve is True
    assert settings.timeouts.turn == 300
    assert settings.logging.level == "DEBUG"
    mcp = backend.opencode_config["mcp"]
    assert mcp["everything"]["command"] == ["npx", "@modelcontextprotocol/server-everything"]
    assert mcp["tavily"]["url"].startswith("https://mcp.tavily.com/mcp/")
    assert all("$comment" not in server for server in mcp.values())
    warning = " ".join(record.getMessage() for record in caplog.records)
    for ignored in ("agentCard.protocolVersion", "features.autoAnswerQuestions", "timeouts.pollingInterval"):
        assert ignored in warning


def test_node_only_sections_load_with_a_warning_naming_them(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    raw = json.loads(NODE_CONFIG.read_text())
    raw["agentCard"] |= {"pushNotifications": False, "stateTransitionHistory": True}
    raw["session"] = {"titlePrefix": "A2A Session", "reuseByContext": True, "ttl": 1_800_000, "cleanupInterval": 1}
    raw["events"] = {"transport": "none"}
    raw["memory"] = {"instructions": "Be brief."}
    raw["subAgents"] = {"agents": []}
    path = write(tmp_path, raw, "config.json")
    with caplog.at_level(logging.WARNING, logger="a2a_wrapper.config.node"):
        settings = load_config(path)
    assert settings.sessions.ttl == 1800
    warning = " ".join(record.getMessage() for record in caplog.records)
    named = ["events", "memory", "subAgents", "session.titlePrefix", "session.reuseByContext"]
    for key in [*named, "session.cleanupInterval", "agentCard.pushNotifications", "agentCard.stateTransitionHistory"]:
        assert key in warning


@pytest.mark.parametrize(
    ("raw", "check"),
    [
        ({"agentCard": {"name": "N", "description": "d"}}, lambda s: s.auto_approve is True),
        ({"agentCard": {"name": "N"}, "features": {"autoApprovePermissions": False}}, lambda s: not s.auto_approve),
        (
            {"agentCard": {"name": "N"}, "server": {"advertiseHost": "agents.local", "advertiseProtocol": "https"}},
            lambda s: (s.server.port, s.advertised_url) == (3000, "https://agents.local:3000"),
        ),
        (
            {"agentCard": {"name": "N"}, "opencode": {"model": "", "agent": "", "systemPrompt": "", "baseUrl": ""}},
            lambda s: (s.backend.model, s.backend.agent, s.backend.base_url) == ("offline/offline-model", None, None),
        ),
        ({"agentCard": {"name": "N"}, "logging": {"level": "warn"}}, lambda s: s.logging.level == "WARNING"),
    ],
    ids=["approve-by-default", "approve-off", "advertise-default-port", "empty-strings-unset", "warn"],
)
def test_node_defaults_carry_over(tmp_path: Path, raw: dict[str, Any], check: Any) -> None:
    assert check(load_config(write(tmp_path, raw, "config.json")))


@pytest.mark.parametrize(
    ("raw", "key", "shown"),
    [
        ({"agentCard": {"name": "N"}, "server": {"port": 70000}}, "server.port", "70000"),
        ({"agentCard": {"name": "N"}, "opencode": {"model": "sonnet"}}, "backend.model", "'sonnet'"),
        ({"agentCard": {"name": "N"}, "timeouts": {"prompt": "5 minutes"}}, "timeouts.turn", "'5 minutes'"),
        ({"agentCard": {"name": "N"}, "opencode": {"projectDir": "/x"}}, "backend.projectDir", "'/x'"),
    ],
)
def test_a_bad_node_config_is_named(tmp_path: Path, raw: dict[str, Any], key: str, shown: str) -> None:
    path = write(tmp_path, raw, "config.json")
    message = error_of(path)
    assert f"{path}: {key}: " in message
    assert shown in message


def test_a_bad_rule_in_the_agent_file_is_named_as_written(tmp_path: Path) -> None:
    rule = {"name": "r1", "decision": "allow", "class": "nope"}
    message = error_of(write(tmp_path, {"card": CARD, "shield": {"rules": [rule]}}))
    assert "shield.rules.0: rule `r1`: class.0: Input should be" in message and "class_" not in message
    assert "(got 'nope')" in message and "'decision'" not in message  # the value, not the whole rule
