"""How Gemini CLI is started (ACP mode, its model, its provider's variables, the managed install's packages), and a
config naming `gemini` where it is not installed."""

from pathlib import Path

import pytest

from a2a_wrapper.backends import create_backend
from a2a_wrapper.backends.gemini import launch
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import GeminiSettings
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.errors import InstallError
from a2a_wrapper.offline_model import MODEL_ID, OfflineModel
from tests.helpers.gemini_fixtures import gemini_backend


def gemini_settings(model: OfflineModel, tmp_path: Path, **fields: object) -> AgentSettings:
    state = tmp_path / "state"
    return AgentSettings(
        card=CardSettings(name="gemini-boundary"),
        server=ServerSettings(port=free_port()),
        backend=gemini_backend(model, state / "workspace", state),
        state_dir=state,
        **fields,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (None, ["--acp", "--model", MODEL_ID]),
        (["gemini"], ["gemini", "--acp", "--model", MODEL_ID]),
        (["gemini", "--acp"], ["gemini", "--acp", "--model", MODEL_ID]),  # not twice
    ],
)
def test_gemini_is_started_in_acp_mode_on_its_model(
    offline_model: OfflineModel, tmp_path: Path, command: list[str] | None, expected: list[str]
) -> None:
    section = GeminiSettings(**gemini_backend(offline_model, tmp_path, tmp_path) | {"command": command})
    argv, packages = launch.cli_command(section)
    if command is None:  # node, the managed install's entry script, then the flags; its packages readable
        assert argv[1].endswith("@google/gemini-cli/bundle/gemini.js") and argv[2:] == expected
        assert packages and Path(argv[1]).is_relative_to(packages[0])
    else:
        assert argv == expected and packages == []
    acp = launch.acp_settings(section, argv)
    assert acp.provider is not None and acp.provider.type == "gemini"
    assert (acp.provider.url_env, acp.provider.key_env) == ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY")
    assert acp.env["GEMINI_CLI_NO_RELAUNCH"] == "true"


def test_a_gemini_config_where_it_is_not_installed_says_how(
    offline_model: OfflineModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WRAP_BACKENDS_DIR", str(tmp_path / "none"))
    with pytest.raises(InstallError, match=r"run `a2a-wrap backends install gemini`"):
        create_backend(gemini_settings(offline_model, tmp_path))
