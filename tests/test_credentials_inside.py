"""No key of the operator's inside the backend: an agent with a provider `api_key` (and, for Copilot, a GitHub
token in the wrapper's environment) runs a turn on the offline model through the model relay, and a tool call
allowed by the rules looks for both everywhere it can. The test then looks for itself: the backend's folders on
disk and the environment of every process of the backend's tree."""

import re
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import ModelProvider
from a2a_wrapper.config.runtimes import ProcessRuntime, Runtime, SandboxRuntime
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.sandbox.model_relay import WIRES
from tests.conftest import serving
from tests.helpers.a2a_wire import final_state, stream
from tests.helpers.acp_fixtures import acp_copilot_backend
from tests.helpers.behaviour import claude_section, copilot_section, gemini_section, opencode_section
from tests.helpers.copilot_fixtures import fake_github, github_backend
from tests.helpers.tenants import sole_backend
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow


def acp_copilot_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    """`copilot --acp` given its provider through `provider` (relayed) instead of its own variables."""
    section = acp_copilot_backend(model, workdir, state_dir)
    env = section["env"]
    names = {"url_env": "COPILOT_PROVIDER_BASE_URL", "key_env": "COPILOT_PROVIDER_API_KEY"}
    section["provider"] = {"type": "openai", "base_url": env.pop(names["url_env"]), **names}
    del env[names["key_env"]]
    return section


SECTIONS = {
    "opencode": opencode_section,
    "copilot": copilot_section,
    "acp-copilot": acp_copilot_section,
    "claude": claude_section,
    "gemini": gemini_section,
    "copilot-github": lambda model, workdir, state_dir: github_backend(model, workdir),
}
CASES = [
    pytest.param("opencode", SandboxRuntime(), id="opencode-sandbox"),
    pytest.param("copilot", SandboxRuntime(), id="copilot-sandbox"),
    pytest.param("acp-copilot", SandboxRuntime(), id="acp-copilot-sandbox"),
    pytest.param("claude", SandboxRuntime(), id="claude-sandbox"),
    pytest.param("gemini", SandboxRuntime(), id="gemini-sandbox"),
    pytest.param("opencode", ProcessRuntime(), id="opencode-process"),
    # No provider: the GitHub token is what the CLI needs (given to each session, never to its environment).
    pytest.param("copilot-github", SandboxRuntime(), id="copilot-github-sandbox"),
]


def secret(kind: str) -> tuple[str, str]:
    """A recognisable random value (no known credential format: the guard would redact it and hide a leak) and
    the shell that rebuilds it from two pieces, so the command that searches for it does not contain it whole
    (Copilot's parser joins quoted pieces into the paths it records, but does not expand a parameter's default;
    Gemini CLI refuses a command substitution, so no `$(…)`)."""
    head, tail = kind, secrets.token_hex(16)
    return f"{head}-{tail}", f'"${{A2AW_UNSET_PIECE:-{head}}}-{tail}"'


def settings_for(backend: str, runtime: Runtime, model: OfflineModel, tmp_path: Path, key: str) -> AgentSettings:
    state = tmp_path / "state"
    section: dict[str, Any] = SECTIONS[backend](model, state / "workspace", state)
    provider = section.get("provider")
    if isinstance(provider, ModelProvider):
        provider = provider.model_dump(exclude={"api_key"})
    if provider is not None:
        section["provider"] = {**provider, "api_key": key}
    return AgentSettings(
        card=CardSettings(name=f"keyless-{backend}"),
        server=ServerSettings(port=free_port()),
        backend=section,
        state_dir=state,
        runtime=runtime,
        auto_approve=True,
    )


FOUND = "found.txt"  # in the workspace: what the search command counted, on the disk


def search_command(needles: list[str], canary: str, tmp: str) -> str:
    """Counts, written to FOUND in the workspace (Gemini CLI reports no command's output), what matched each way of
    looking; the canary proves the search finds."""
    pattern = " ".join(f"-e {n}" for n in needles)
    steps = [  # no $(…): Gemini CLI refuses a command substitution
        f"env | grep -c {pattern} | sed s/^/env-matches:/",
        f"cat /proc/self/environ /proc/$PPID/environ | tr '\\0' '\\n' | grep -c {pattern} | sed s/^/environ-matches:/",
        f"grep -rl {pattern} $HOME $XDG_CONFIG_HOME {tmp} . 2>/dev/null | wc -l | sed s/^/file-matches:/",
        f"grep -rl {canary} $HOME $XDG_CONFIG_HOME {tmp} . 2>/dev/null | wc -l | sed s/^/canary-matches:/",
        "env | wc -l | sed s/^/env-lines:/",
    ]
    return f"{{ {'; '.join(steps)}; }} > {FOUND}"


def tree(root: int) -> list[int]:
    """`root` and every process under it, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def files_under(folder: Path) -> Iterator[Path]:
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and not path.is_socket():
            yield path


@pytest.fixture
async def model(backend: str, offline_model: OfflineModel) -> AsyncIterator[OfflineModel]:
    """The offline model; for Copilot on GitHub's models, one that also plays GitHub and the Copilot API."""
    if backend != "copilot-github":
        yield offline_model
        return
    async with fake_github() as fake:
        yield fake


@pytest.mark.parametrize(("backend", "runtime"), CASES)
async def test_no_key_or_token_is_inside_the_backend(
    backend: str,
    runtime: Runtime,
    model: OfflineModel,
    tmp_path: Path,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key, key_shell = secret("relaykey")
    token, token_shell = secret("ghtoken")
    monkeypatch.setenv("GH_TOKEN", token)  # the operator's, in the wrapper's environment
    canary, canary_shell = secret("canary")
    settings = settings_for(backend, runtime, model, tmp_path, key)
    settings.backend.workdir.mkdir(parents=True)
    (settings.backend.workdir / "canary.txt").write_text(canary)
    model.control.clear()
    tmp = "/tmp" if runtime.kind == "sandbox" else "$TMPDIR"  # under process, /tmp is the host's, shared
    command = search_command([key_shell, token_shell], canary_shell, tmp)
    async with serving(settings, model) as served:
        events = await stream(http, served.jsonrpc, bash_params(command, description="look around"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        backend_pid = sole_backend(served.agent).pid
        assert isinstance(backend_pid, int)
        environments = {pid: _environ(pid) for pid in tree(backend_pid)}
    found = (settings.backend.workdir / FOUND).read_text()
    counts = dict(re.findall(r"([a-z-]+-(?:matches|lines)):(\d+)", found))
    assert int(counts["canary-matches"]) >= 1 and int(counts["env-lines"]) > 5, counts  # the search finds
    assert counts["env-matches"] == counts["environ-matches"] == counts["file-matches"] == "0", counts
    assert b"PATH=" in environments[backend_pid], "the backend's own environment was read"
    for pid, environ in environments.items():
        assert key.encode() not in environ and token.encode() not in environ, pid
    for path in files_under(tmp_path / "state"):
        content = path.read_bytes()
        assert key.encode() not in content and token.encode() not in content, path
    provider = settings.backend.provider  # type: ignore[union-attr]
    header, credential = "Authorization", f"Bearer {token}"
    if provider is not None:  # the key in its wire's header, as the relay sends it (OpenCode's has no type: openai)
        wire = WIRES[getattr(provider, "type", "openai")]
        header, credential = wire.key_header, wire.key_prefix + key
    received = model.control.headers()
    assert received and all(h.get(header, "").lower() == credential.lower() for h in received), received


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""  # ended meanwhile


def test_a_value_split_for_the_shell_is_the_value() -> None:
    value, shell = secret("piece")
    assert subprocess.run(["sh", "-c", f"echo {shell}"], capture_output=True, text=True).stdout.strip() == value
    assert value not in shell
