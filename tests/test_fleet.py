"""The fleet's pure parts: loading and checking a fleet, backoff, skill filtering, the status table, CLI errors."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from a2a_wrapper.backoff import CrashHistory
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.fleet import RestartPolicy, load_fleet
from a2a_wrapper.fleet.registry import describe_agent, has_skill
from a2a_wrapper.fleet.status import format_status
from tests.helpers.cli import a2a_wrap


def config(folder: Path, name: str, port: int, **extra: Any) -> Path:
    path = folder / name / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"card": {"name": name}, "server": {"port": port}, **extra}))
    return path


def fleet_file(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / "fleet.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_folder_of_agent_folders(tmp_path: Path) -> None:
    config(tmp_path, "b", 9002)
    config(tmp_path, "a", 9001)
    (tmp_path / "c").mkdir()  # no config in it: not an agent
    (tmp_path / "d" / "config.json").parent.mkdir()
    (tmp_path / "d" / "config.json").write_text('{"card": {"name": "d"}, "server": {"port": 9004}}')
    fleet = load_fleet([tmp_path])
    assert [(agent.name, agent.port) for agent in fleet.agents] == [("a", 9001), ("b", 9002), ("d", 9004)]
    assert fleet.registry.port == 8800 and fleet.registry.host == "127.0.0.1"
    assert fleet.agents[0].argv()[-5:] == ["serve", "--config", str(tmp_path / "a" / "config.yaml"), "--port", "9001"]


def test_a_fleet_file_names_configs_relative_to_itself_with_port_overrides_and_remote_agents(tmp_path: Path) -> None:
    config(tmp_path / "agents", "review", 9001)
    path = fleet_file(
        tmp_path / "agents",
        {
            "registry": {"port": 9800},
            "restart": {"max_crashes": 2},
            "agents": [{"config": "review/config.yaml", "port": 9101}, {"url": "http://docs:8000/", "name": "docs"}],
        },
    )
    fleet = load_fleet([path], {"host": "0.0.0.0"})
    assert [(agent.name, agent.port, agent.url) for agent in fleet.agents] == [
        ("review", 9101, "http://127.0.0.1:9101")
    ]
    assert fleet.remotes[0].url == "http://docs:8000" and fleet.remotes[0].name == "docs"
    assert fleet.remotes[0].card_url == "http://docs:8000/.well-known/agent-card.json"
    assert (fleet.registry.host, fleet.registry.port) == ("0.0.0.0", 9800)
    assert fleet.restart.max_crashes == 2
    assert fleet.sources == (path,)


@pytest.mark.parametrize(
    ("agents", "registry_port", "message"),
    [
        (
            [("a", 9001), ("b", 9001)],
            8800,
            "agent 'a' ({a}) and agent 'b' ({b}) both have port 9001; each must be unique in a fleet",
        ),
        ([("a", 9001), ("b", 8800)], 8800, "the registry and agent 'b' ({b}) both have port 8800"),
        ([("a", 9001), ("b", 9002)], 9002, "the registry and agent 'b' ({b}) both have port 9002"),
        ([("a", 0)], 8800, "{a}: server.port: 0 (a random port) cannot be listed"),
    ],
)
def test_port_clashes_are_refused_naming_both(
    tmp_path: Path, agents: list[tuple[str, int]], registry_port: int, message: str
) -> None:
    paths = {name: config(tmp_path, name, port) for name, port in agents}
    with pytest.raises(ConfigError) as caught:
        load_fleet([tmp_path], {"port": registry_port})
    assert message.format(**paths) in str(caught.value)


def test_duplicate_names_are_refused_naming_both(tmp_path: Path) -> None:
    first = config(tmp_path, "one", 9001, card={"name": "same"})
    second = config(tmp_path, "two", 9002, card={"name": "same"})
    with pytest.raises(ConfigError) as caught:
        load_fleet([tmp_path])
    assert str(caught.value) == (
        f"agent 'same' ({first}) and agent 'same' ({second}) both have the name 'same'; each must be unique in a fleet"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"agents": [{"config": "x.yaml", "url": "http://x:1"}]}, "agents.0: an agent entry has exactly"),
        ({"agents": [{"url": "http://x:1", "port": 9}]}, "agents.0: `port` applies to a `config` agent"),
        ({"agents": [{"config": "x.yaml", "port": 70000}]}, "agents.0.port: Input should be less than or equal"),
        ({"agents": [{"url": "ftp://x"}]}, "agents.0.url: String should match pattern"),
        ({"agents": [], "registry": {}}, "agents: List should have at least 1 item"),
        ({"agents": [{"url": "http://x:1"}], "registry": {"prot": 1}}, "registry.prot: unknown key (got 1)"),
    ],
)
def test_fleet_file_errors_name_the_key(tmp_path: Path, data: dict[str, Any], message: str) -> None:
    path = fleet_file(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load_fleet([path])
    assert f"{path}: {message}" in str(caught.value)


def test_a_bad_agent_config_is_refused_naming_its_key(tmp_path: Path) -> None:
    path = config(tmp_path, "a", 9001, backend={"kind": "opencode", "modle": "x/y"})
    with pytest.raises(ConfigError, match=f"{path}: backend.modle: unknown key"):
        load_fleet([tmp_path])


def test_empty_folders_and_missing_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no agent folders in it"):
        load_fleet([tmp_path])
    with pytest.raises(ConfigError, match="no such file or folder"):
        load_fleet([tmp_path / "nowhere.yaml"])


@pytest.mark.slow
def test_the_cli_refuses_a_clash_in_one_sentence_without_a_traceback(tmp_path: Path) -> None:
    config(tmp_path, "a", 9001)
    config(tmp_path, "b", 9001)
    result = a2a_wrap("fleet", str(tmp_path))
    assert result.returncode == 1
    assert "both have port 9001" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("crash_times", "delays"),
    [
        ([0, 1, 2, 3, 4], [1.0, 2.0, 4.0, 8.0, 16.0]),
        ([0, 1, 2, 3, 4, 5], [1.0, 2.0, 4.0, 8.0, 16.0, None]),  # the sixth within the window: fatal
        ([0, 100, 200, 300, 400, 500], [1.0, 2.0, 4.0, 4.0, 4.0, 4.0]),  # older crashes leave the window
        ([0, 301, 602], [1.0, 1.0, 1.0]),
    ],
)
def test_backoff_doubles_and_gives_up_after_too_many_crashes_in_the_window(
    crash_times: list[float], delays: list[float | None]
) -> None:
    history = CrashHistory(RestartPolicy(backoff=1, max_backoff=30, max_crashes=5, window=300))
    assert [history.record(time) for time in crash_times] == delays


def test_backoff_is_capped() -> None:
    history = CrashHistory(RestartPolicy(backoff=1, max_backoff=5, max_crashes=10, window=300))
    assert [history.record(time) for time in range(6)] == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


CARD = {"skills": [{"id": "code-review", "name": "Code review", "tags": ["review", "Security"]}, "not a skill"]}


@pytest.mark.parametrize(
    ("skill", "matches"),
    [("review", True), ("code-review", True), ("security", True), ("CODE-REVIEW", True), ("docs", False), ("", False)],
)
def test_skill_filter_matches_a_tag_or_an_id(skill: str, matches: bool) -> None:
    entry = describe_agent("a", "http://a", "http://a/card", "running", CARD)
    assert entry["skills"] == [{"id": "code-review", "name": "Code review", "tags": ["review", "Security"]}]
    assert has_skill(entry, skill) is matches


def test_the_status_table() -> None:
    healthy = {"time": "2026-01-02T03:04:05+00:00", "healthy": True, "status_code": 200}
    failing = {"time": "2026-01-02T03:04:06+00:00", "healthy": False, "error": "not reachable (ConnectError: x)"}
    rows = [
        describe_agent(
            "review", "http://127.0.0.1:8801", "", "running", CARD, backend="opencode", model="offline/m",
            last_health=healthy, restarts=1,
        ),
        describe_agent("docs", "http://docs:8000", "", "unreachable", None, last_health=failing, restarts=None),
    ]  # fmt: skip
    assert format_status(rows).splitlines() == [
        "name    state        url                    backend   model      skills       health" + " " * 48 + "restarts",
        "------  -----------  ---------------------  --------  ---------  -----------  " + "-" * 52 + "  --------",
        "review  running      http://127.0.0.1:8801  opencode  offline/m  code-review  ok at 03:04:05" + " " * 40 + "1",
        "docs    unreachable  http://docs:8000       -         -          -            "
        + "failing at 03:04:06: not reachable (ConnectError: x)  -",
    ]
    assert format_status([]) == "the registry lists no agents\n"


def test_the_example_fleet_file_loads() -> None:
    fleet = load_fleet([Path(__file__).resolve().parent.parent / "configs" / "fleet.yaml"])
    assert [(agent.name, agent.port) for agent in fleet.agents] == [("code-review", 8801)]
    assert fleet.registry.port == 8800 and fleet.restart.stop_grace == 30
