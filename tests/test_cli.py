"""`a2a-wrap` as a user runs it: check, schema, errors without tracebacks, help, backend paths."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.cli import ROOT, a2a_wrap, check_output

pytestmark = pytest.mark.slow

CODE_REVIEW = ROOT / "agents" / "code-review" / "config.yaml"
NODE_CONFIG = Path(__file__).parent / "fixtures" / "node-a2a-opencode.json"
MASK = "**********"


@pytest.fixture
def state_home(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def write(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / "agent.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


SECRET_CONFIG = {
    "card": {"name": "Reviewer", "skills": [{"id": "review", "name": "Review", "tags": ["review"]}]},
    "server": {"host": "0.0.0.0", "port": 8100, "advertise_url": "https://agents.example.com/reviewer/"},
    "backend": {
        "kind": "opencode",
        "password": "hunter2-server-password",
        "provider": {
            "id": "corp",
            "base_url": "https://llm.example.com/v1",
            "api_key": "${REVIEW_PROVIDER_KEY}",
            "models": ["big"],
        },
        "model": "corp/big",
    },
}


def test_check_masks_secrets_and_prints_the_card(tmp_path: Path, state_home: dict[str, str]) -> None:
    path = write(tmp_path, SECRET_CONFIG)
    result = a2a_wrap("check", "--config", str(path), env={**state_home, "REVIEW_PROVIDER_KEY": "sk-live-123456"})
    assert result.returncode == 0, result.stderr
    assert "sk-live-123456" not in result.stdout + result.stderr
    assert "hunter2-server-password" not in result.stdout + result.stderr
    config, card = check_output(result.stdout)
    assert config["backend"]["provider"]["api_key"] == MASK
    assert config["backend"]["password"] == MASK
    assert config["backend"]["model"] == "corp/big"
    assert config["backend"]["workdir"] == str(tmp_path / "workspace")
    assert config["state_dir"] == str(tmp_path / "state" / "a2a-wrapper" / "reviewer")
    assert card["name"] == "Reviewer"
    assert card["skills"][0]["tags"] == ["review"]
    urls = {(i["protocolBinding"], i["protocolVersion"]): i["url"] for i in card["supportedInterfaces"]}
    assert urls[("JSONRPC", "1.0")] == "https://agents.example.com/reviewer/a2a/jsonrpc"
    assert urls[("HTTP+JSON", "1.0")] == "https://agents.example.com/reviewer/a2a/rest"
    assert {url.split("/a2a/")[0] for url in urls.values()} == {"https://agents.example.com/reviewer"}


def test_check_shows_environment_overrides(tmp_path: Path, state_home: dict[str, str]) -> None:
    env = {**state_home, "REVIEW_PROVIDER_KEY": "k", "A2A_WRAP_SERVER__PORT": "9100", "A2A_WRAP_AUTO_APPROVE": "1"}
    config_data = {**SECRET_CONFIG, "server": {"port": 8100}}
    result = a2a_wrap("check", "--config", str(write(tmp_path, config_data)), env=env)
    assert result.returncode == 0, result.stderr
    config, card = check_output(result.stdout)
    assert (config["server"]["port"], config["auto_approve"]) == (9100, True)
    assert card["supportedInterfaces"][0]["url"] == "http://127.0.0.1:9100/a2a/jsonrpc"


def test_check_accepts_a_node_a2a_opencode_config(state_home: dict[str, str]) -> None:
    result = a2a_wrap("check", "--config", str(NODE_CONFIG), env=state_home)
    assert result.returncode == 0, result.stderr
    config, card = check_output(result.stdout)
    assert config["backend"]["model"] == "github-copilot/claude-sonnet-4.5"
    assert card["supportedInterfaces"][0]["url"] == "http://localhost:3000/a2a/jsonrpc"
    assert "subAgents" not in result.stderr  # the example has none; only what it has is warned about
    assert "agentCard.protocolVersion" in result.stderr


def test_the_code_review_example_checks(state_home: dict[str, str]) -> None:
    result = a2a_wrap("check", "--config", str(CODE_REVIEW.relative_to(ROOT)), env=state_home)
    assert result.returncode == 0, result.stderr
    config, card = check_output(result.stdout)
    backend = config["backend"]
    assert (backend["kind"], backend["model"], backend["system_prompt_mode"]) == (
        "opencode",
        "offline/offline-model",
        "append",
    )
    assert backend["provider"]["base_url"] == "http://127.0.0.1:8765/v1"
    assert backend["provider"]["models"] == ["offline-model", "offline-small"]
    assert backend["provider"]["api_key"] is None  # never set: not shown as a masked secret
    assert backend["system_prompt"] == (CODE_REVIEW.parent / "instructions.md").read_text()
    assert backend["workdir"] == str(CODE_REVIEW.parent / "workspace")
    assert (config["server"]["port"], config["auto_approve"]) == (8000, False)
    assert card["name"] == "code-review"
    assert len(card["skills"]) >= 2
    assert {"review", "code-review"} <= {tag for skill in card["skills"] for tag in skill["tags"]}


def test_the_code_review_example_follows_the_offline_model_url(state_home: dict[str, str]) -> None:
    env = {**state_home, "A2A_OFFLINE_MODEL_URL": "http://127.0.0.1:9999/v1"}
    result = a2a_wrap("check", "--config", str(CODE_REVIEW), env=env)
    assert result.returncode == 0, result.stderr
    assert check_output(result.stdout)[0]["backend"]["provider"]["base_url"] == "http://127.0.0.1:9999/v1"


def test_schema_describes_the_config_file() -> None:
    result = a2a_wrap("schema")
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    assert {"card", "server", "backend", "sessions", "timeouts", "logging", "auto_approve", "state_dir"} <= set(
        schema["properties"]
    )
    assert schema["required"] == ["card"]
    assert schema["properties"]["backend"]["discriminator"]["propertyName"] == "kind"
    assert "opencode" in schema["properties"]["backend"]["discriminator"]["mapping"]
    opencode = schema["$defs"]["OpenCodeSettings"]["properties"]
    assert {"model", "provider", "workdir", "system_prompt_file", "system_prompt_mode"} <= set(opencode)
    assert schema["$defs"]["ServerSettings"]["properties"]["port"]["maximum"] == 65535
    assert schema["$defs"]["CardSettings"]["additionalProperties"] is False


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("card: {name: R}\nserver: {port: 70000}\n", {}, ["server.port", "70000"]),
        ("card: {name: R}\nbackend: {model: gpt-4o}\n", {}, ["backend.model", "'gpt-4o'"]),
        ("card: {name: R}\nserver: {prot: 8000}\n", {}, ["server.prot: unknown key", "8000"]),
        ("card: {name: R}\nlogging: {level: LOUD}\n", {}, ["logging.level", "'LOUD'"]),
        ("card: {name: R}\nbackend: {password: '${NO_SUCH_VAR_A2A}'}\n", {}, ["backend.password", "NO_SUCH_VAR_A2A"]),
        (
            "card: {name: R}\n",
            {"A2A_WRAP_SERVER__PORT": "eighty"},
            ["environment variable A2A_WRAP_SERVER__PORT for ", "server.port", "'eighty'"],
        ),
        (
            "card: {name: R}\n",
            {"A2A_WRAP_CARD__SKILLS": "[oops"},
            ["environment variable A2A_WRAP_CARD__SKILLS for ", "card: not valid JSON"],
        ),
        ("card: {name: R}\n8000: port\n", {}, ["8000: unknown key", "'port'"]),
        ("card: [unclosed\n", {}, ["not valid YAML"]),
    ],
    ids=["port", "model", "unknown", "level", "variable", "env-value", "env-json", "number-key", "yaml"],
)
def test_a_bad_config_fails_with_a_message_not_a_traceback(
    tmp_path: Path, state_home: dict[str, str], text: str, env: dict[str, str], expected: list[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    result = a2a_wrap("check", "--config", str(path), env={**state_home, **env})
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"{path}: " in result.stderr
    for part in expected:
        assert part in result.stderr


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    result = a2a_wrap("check", "--config", str(tmp_path / "nope.yaml"))
    assert result.returncode != 0
    assert f"{tmp_path / 'nope.yaml'}: cannot read the config file" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--port", "70000"], ["server.port", "70000"]),
        (["--advertise-url", "ftp://example.com"], ["server.advertise_url", "'ftp://example.com'"]),
    ],
)
def test_run_flags_beat_the_file_and_are_validated_before_starting(
    tmp_path: Path, state_home: dict[str, str], flags: list[str], expected: list[str]
) -> None:
    path = write(tmp_path, {"card": {"name": "R"}, "server": {"port": 8100}})
    result = a2a_wrap("--config", str(path), *flags, env=state_home)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    for part in [str(path), *expected]:
        assert part in result.stderr
    assert f"flag {flags[0]} for {path}: " in result.stderr  # the flag is named: the file holds another value


def test_run_without_a_config_prints_help() -> None:
    result = a2a_wrap()
    assert result.returncode == 2
    assert "Usage:" in result.stdout


def test_help_lists_the_commands_and_flags() -> None:
    result = a2a_wrap("--help")
    assert result.returncode == 0
    for word in ("check", "schema", "serve", "backends", "--config", "--port", "--advertise-url", "--log-level"):
        assert word in result.stdout
    check_help = a2a_wrap("check", "--help")
    assert check_help.returncode == 0 and "--config" in check_help.stdout


def test_backends_path_prints_the_installed_binary() -> None:
    result = a2a_wrap("backends", "path", "opencode")
    assert result.returncode == 0, result.stderr
    binary = Path(result.stdout.strip())
    assert binary.is_file() and os.access(binary, os.X_OK)


def test_backends_path_of_an_unknown_kind_fails_cleanly() -> None:
    result = a2a_wrap("backends", "path", "nosuch")
    assert result.returncode != 0
    assert "unknown backend 'nosuch'; known: opencode" in result.stderr
    assert "Traceback" not in result.stderr


SHIELDED = {
    "card": {"name": "shielded"},
    "shield": {
        "rules": [
            {"name": "tests-ok", "decision": "allow", "class": "execute", "commands": ["pytest *"]},
            {"name": "no-rm", "decision": "deny", "commands": ["rm *"], "reason": "Deleting is not allowed here."},
        ]
    },
}


def test_check_shows_what_the_sandbox_lets_the_backend_touch(tmp_path: Path, state_home: dict[str, str]) -> None:
    result = a2a_wrap("check", "--config", str(write(tmp_path, SHIELDED)), env=state_home)
    assert result.returncode == 0, result.stderr
    runtime = json.loads(result.stdout.split("# runtime: where the backend runs, what it can write, read and reach")[1])
    assert runtime["kind"] == "sandbox" and "checked on this machine" in runtime["mechanism"]
    copies = state_home["XDG_STATE_HOME"] + "/a2a-wrapper/shielded/workspaces/<tenant>"  # per task: one caller's copies
    assert runtime["writable"][0] == copies and "your home folder" in runtime["hidden"]
    assert str((tmp_path / "workspace").resolve()) not in runtime["writable"]
    assert runtime["network"]["direct"].startswith("none")
    assert runtime["tenants"]["max_running"] == 8 and any("/tenants/<tenant>/" in p for p in runtime["writable"])
    assert not (tmp_path / "workspace").exists(), "check creates nothing"


def test_check_prints_the_shield_rules_as_a_table(tmp_path: Path, state_home: dict[str, str]) -> None:
    result = a2a_wrap("check", "--config", str(write(tmp_path, SHIELDED)), env=state_home)
    assert result.returncode == 0, result.stderr
    rules = result.stdout.split("# permission rules\n")[1]
    assert "agent:tests-ok" in rules and "agent:no-rm" in rules and "default:other" in rules


@pytest.mark.parametrize(
    "command, decision, rule",
    [
        ("pytest -q tests", "allow", "agent:tests-ok"),
        ("pytest -q && rm -rf build", "deny", "agent:no-rm"),
        ("make deploy", "ask", "default:execute"),
    ],
)
def test_shield_explain_names_the_decision_and_the_rule(
    tmp_path: Path, state_home: dict[str, str], command: str, decision: str, rule: str
) -> None:
    config = str(write(tmp_path, SHIELDED))
    result = a2a_wrap("shield", "explain", "--config", config, "--tool", "bash", "--command", command, env=state_home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"decision: {decision} (rule {rule})"


def test_auto_approve_with_shield_rules_is_refused(tmp_path: Path, state_home: dict[str, str]) -> None:
    result = a2a_wrap("check", "--config", str(write(tmp_path, {**SHIELDED, "auto_approve": True})), env=state_home)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "auto_approve" in result.stderr and "shield" in result.stderr


def test_check_redacts_credentials_in_free_form_sections(tmp_path: Path, state_home: dict[str, str]) -> None:
    key = "sk-ant-api03-" + "q" * 40
    config = {
        "card": {"name": "raw"},
        "backend": {
            "kind": "opencode",
            "env": {"ANTHROPIC_API_KEY": key, "PLAIN": "hello"},
            "opencode_config": {"mcp": {"x": {"type": "remote", "url": "https://m.example/?apiKey=abc123def456"}}},
        },
    }
    result = a2a_wrap("check", "--config", str(write(tmp_path, config)), env=state_home)
    assert result.returncode == 0, result.stderr
    assert key not in result.stdout and "abc123def456" not in result.stdout
    assert '"PLAIN": "hello"' in result.stdout


@pytest.mark.parametrize("agent", ["code-review", "copilot-coder", "acp-reviewer"])
def test_every_example_agent_checks(agent: str, state_home: dict[str, str]) -> None:
    result = a2a_wrap("check", "--config", str(ROOT / "agents" / agent / "config.yaml"), env=state_home)
    assert result.returncode == 0, result.stderr
    config, card = check_output(result.stdout)
    assert card["name"] == config["card"]["name"] == agent


def test_check_redacts_credentials_in_mcp_servers(tmp_path: Path, state_home: dict[str, str]) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    servers = {"gh": {"url": "https://mcp.example/mcp", "headers": {"Authorization": f"Bearer {token}"}}}
    data = {"card": {"name": "m"}, "backend": {"kind": "acp", "command": ["agent"], "mcp_servers": servers}}
    result = a2a_wrap("check", "--config", str(write(tmp_path, data)), env=state_home)
    assert result.returncode == 0, result.stderr
    assert token not in result.stdout


def test_a_taken_port_is_refused_before_the_backend_starts(tmp_path: Path, state_home: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = write(tmp_path, {"card": {"name": "late"}, "server": {"port": port}, "runtime": {"kind": "process"}})
        result = a2a_wrap("serve", "--config", str(path), env=state_home)
    assert result.returncode != 0
    assert f"agent 'late': cannot listen on 127.0.0.1:{port} (Address already in use)" in result.stderr
    assert "serving" not in result.stderr and "Traceback" not in result.stderr
    assert " started " not in result.stderr  # no backend process was started only to be stopped again


@pytest.mark.parametrize("command", [["model"], ["registry", "--agent", "http://127.0.0.1:9"]])
def test_a_taken_port_is_one_sentence_for_the_model_and_the_registry(command: list[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = a2a_wrap(*command, "--port", str(port))
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port} (Address already in use)" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_second_serve_on_one_state_folder_is_refused_naming_the_first(
    tmp_path: Path, state_home: dict[str, str]
) -> None:
    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    provider = {"id": "offline", "base_url": "http://127.0.0.1:9/v1", "models": ["offline-model"]}
    config = {
        "card": {"name": "twice"},
        "backend": {"kind": "opencode", "model": "offline/offline-model", "provider": provider},
        "runtime": {"kind": "process"},
        "state_dir": str(tmp_path / "state"),
    }
    path = write(tmp_path, {**config, "server": {"port": ports[0]}})
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("A2A_WRAP_")}, **state_home}
    with subprocess.Popen(
        [sys.executable, "-m", "a2a_wrapper", "serve", "--config", str(path)],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
    ) as first:  # fmt: skip
        try:
            assert first.stderr is not None
            for line in first.stderr:
                if "serving" in line:
                    break
            else:
                raise AssertionError(f"the first agent never served (exit {first.wait()})")
            second = a2a_wrap("serve", "--config", str(path), "--port", str(ports[1]), env=state_home)
        finally:
            first.terminate()
            first.communicate(timeout=30)
    assert second.returncode != 0
    expected = f"{tmp_path / 'state'} is in use by pid {first.pid} ("
    assert expected in second.stderr and "runs once per state folder" in second.stderr, second.stderr
    assert " started " not in second.stderr and "Traceback" not in second.stderr
