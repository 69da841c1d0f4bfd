"""Per-task workspaces with a real sandboxed OpenCode on the offline model: each context edits its own copy, the
source and its `.git` stay as they were, each task carries its diffs and a patch that applies to a clone of the
source, what an agent plants in its copy's `.git` runs nothing when the wrapper reads the change, a restart finds
the context's copy again, and an expired session's copy is gone."""

import asyncio
import dataclasses
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.config.settings import SessionSettings
from a2a_wrapper.config.workspace import WorkspaceSettings
from a2a_wrapper.shield.rules import ShieldConfig
from a2a_wrapper.workspaces.folders import BASELINES, COPIES, caller_folder
from tests.helpers.a2a_wire import final_state, rpc, stream
from tests.helpers.auth import bearer
from tests.helpers.behaviour import BACKENDS, BackendUnderTest, Harness
from tests.helpers.projects import git_project, run, tree
from tests.helpers.tool_messages import answer_params, bash_params

pytestmark = pytest.mark.slow


def project(folder: Path) -> Path:
    return git_project(folder, {"notes.txt": b"original\n"})


def artifacts(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    found = [e["artifactUpdate"]["artifact"] for e in events if "artifactUpdate" in e]
    return [artifact for artifact in found if artifact.get("name", "").startswith(name)]


@pytest.fixture
def harness(offline_model, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Harness:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("A2A_WRAP_WORKSPACE__MODE", raising=False)  # the suite's in-place default
    return Harness(BACKENDS[0], offline_model, tmp_path, request.node)


async def test_two_contexts_edit_their_own_copies(harness: Harness, http: httpx.AsyncClient) -> None:
    source = project(harness.tmp_path / "project")
    before, git_before = tree(source), tree(source / ".git")
    workspace = WorkspaceSettings(mode="per_task", source=source)
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    async with harness.serving(auto_approve=True, workspace=workspace) as served:
        edit = f"echo first >> notes.txt; ls {source} > seen.txt 2>&1; pwd > where.txt"
        one = await stream(http, served.jsonrpc, bash_params(edit, context_id=first, description="edit"))
        two = await stream(http, served.jsonrpc, bash_params("echo second > other.txt; cat notes.txt > saw.txt",
                                                           context_id=second, description="edit"))  # fmt: skip
        assert final_state(one) == final_state(two) == "TASK_STATE_COMPLETED"
    assert tree(source) == before and tree(source / ".git") == git_before
    copies = harness.tmp_path / "state" / COPIES
    [copy_one] = [p.parent for p in copies.rglob("where.txt")]
    [copy_two] = [p.parent for p in copies.rglob("saw.txt")]
    assert copy_one != copy_two
    assert (copy_one / "where.txt").read_text().strip() == str(copy_one), "the backend works in the copy"
    assert "No such file" in (copy_one / "seen.txt").read_text(), "the source is not visible inside"
    assert (copy_two / "saw.txt").read_text() == "original\n", "the second context does not see the first's edit"
    [patch] = artifacts(one, "patch")
    diffs = {a["name"] for a in artifacts(one, "diff ")}
    assert {"diff notes.txt", "diff seen.txt", "diff where.txt"} <= diffs
    assert "+first" in patch["parts"][0]["text"]
    fresh = harness.tmp_path / "fresh"
    run("git", "clone", "-q", str(source), str(fresh), cwd=harness.tmp_path)
    run("git", "apply", "--check", cwd=fresh, stdin=patch["parts"][0]["text"])
    [patch_two] = artifacts(two, "patch")
    assert "other.txt" in patch_two["parts"][0]["text"] and "+first" not in patch_two["parts"][0]["text"]


async def test_planted_git_control_files_run_nothing(harness: Harness, http: httpx.AsyncClient) -> None:
    source = project(harness.tmp_path / "project")
    git_before = tree(source / ".git")
    marker = harness.tmp_path / "state" / COPIES / "ran"  # inside the copies' folder: a command could write it
    plant = (
        f"git config core.fsmonitor 'touch {marker}'; git config filter.evil.clean 'touch {marker}'; "
        f"git config diff.external 'touch {marker}'; "
        f"printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
        f"cp .git/hooks/pre-commit .git/hooks/reference-transaction; "
        f"mkdir -p ../evil && printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > ../evil/config && "
        f"echo ../evil > .git/commondir; echo '* filter=evil diff=evil' > .gitattributes; "
        f"mkdir sub && git -C sub init -q && git -C sub config core.fsmonitor 'touch {marker}'; "
        f"echo changed >> notes.txt"
    )
    workspace = WorkspaceSettings(mode="per_task", source=source, branch="a2a/")
    async with harness.serving(auto_approve=True, workspace=workspace) as served:
        events = await stream(http, served.jsonrpc, bash_params(plant, description="plant"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
    assert not marker.exists(), "the wrapper ran a command the agent planted"
    [patch] = artifacts(events, "patch")
    branch = patch["metadata"]["a2a-wrapper"]["branch"]
    assert run("git", "show", f"{branch}:notes.txt", cwd=source) == "original\nchanged\n"
    assert patch["metadata"]["a2a-wrapper"]["files"] and "sub" not in patch["metadata"]["a2a-wrapper"]["files"]
    assert not marker.exists()
    git_after = tree(source / ".git")
    assert {k: v for k, v in git_after.items() if k in git_before and not k.startswith("logs/")} == {
        k: v for k, v in git_before.items() if not k.startswith("logs/")
    }
    assert all(k.startswith(("objects/", "refs/heads/a2a/", "logs/")) for k in git_after.keys() - git_before.keys())


async def test_a_restart_resumes_the_copy_and_expiry_removes_it(harness: Harness, http: httpx.AsyncClient) -> None:
    source = project(harness.tmp_path / "project")
    workspace = WorkspaceSettings(mode="per_task", source=source)
    context = str(uuid.uuid4())
    async with harness.serving(auto_approve=True, workspace=workspace) as served:
        events = await stream(http, served.jsonrpc, bash_params("echo kept > kept.txt", context, "write"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
    [copy] = [p.parent for p in (harness.tmp_path / "state" / COPIES).rglob("kept.txt")]
    sessions = SessionSettings(ttl=8)
    async with harness.serving(auto_approve=True, workspace=workspace, sessions=sessions) as served:
        events = await stream(http, served.jsonrpc, bash_params("cat kept.txt > again.txt", context, "read"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert (copy / "again.txt").read_text() == "kept\n", "the resumed context works in the same copy"
        [patch] = artifacts(events, "patch")
        assert "kept.txt" in patch["parts"][0]["text"], "the change is counted from the copy's start"
        for _ in range(60):  # the agent's own sweep ends the idle session (every ttl/4) within ttl + a sweep
            if not copy.exists():
                break
            await asyncio.sleep(0.5)
        assert not copy.exists() and not any((harness.tmp_path / "state" / BASELINES).rglob("start.json"))


async def test_a_canceled_task_carries_the_change_too(harness: Harness, http: httpx.AsyncClient) -> None:
    source = project(harness.tmp_path / "project")
    workspace = WorkspaceSettings(mode="per_task", source=source)
    async with harness.serving(shield=ShieldConfig(), workspace=workspace) as served:
        asked = await stream(http, served.jsonrpc, bash_params("echo done > first.txt", description="write"))
        assert final_state(asked) == "TASK_STATE_INPUT_REQUIRED"
        done = await stream(http, served.jsonrpc, answer_params(asked[0]["task"], "yes"))
        assert final_state(done) == "TASK_STATE_COMPLETED"
        context = asked[0]["task"]["contextId"]
        waiting = await stream(http, served.jsonrpc, bash_params("touch never.txt", context, "write"))
        assert final_state(waiting) == "TASK_STATE_INPUT_REQUIRED"
        canceled = await rpc(http, served.jsonrpc, "CancelTask", {"id": waiting[0]["task"]["id"]})
    task = canceled["result"]
    assert task["status"]["state"] == "TASK_STATE_CANCELED"
    [patch] = [artifact for artifact in task["artifacts"] if artifact["name"] == "patch"]
    assert "+done" in patch["parts"][0]["text"] and "never.txt" not in patch["parts"][0]["text"]
    assert "diff first.txt" in {artifact["name"] for artifact in task["artifacts"]}


@pytest.mark.parametrize("backend", BACKENDS[1:], ids=lambda backend: backend.name)
async def test_every_backend_works_in_the_context_copy(
    backend: BackendUnderTest, harness: Harness, http: httpx.AsyncClient
) -> None:
    harness = dataclasses.replace(harness, backend=backend)
    source = project(harness.tmp_path / "project")
    before = tree(source)
    workspace = WorkspaceSettings(mode="per_task", source=source)
    async with harness.serving(auto_approve=True, workspace=workspace) as served:
        command = f"pwd > where.txt; ls {source} > seen.txt 2>&1; echo more >> notes.txt"
        events = await stream(http, served.jsonrpc, bash_params(command, description="edit"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
    [where] = (harness.tmp_path / "state" / COPIES).rglob("where.txt")
    assert where.read_text().strip() == str(where.parent), "the backend's session works in the copy"
    assert "No such file" in (where.parent / "seen.txt").read_text()
    assert tree(source) == before
    [patch] = artifacts(events, "patch")
    assert "+more" in patch["parts"][0]["text"]


async def test_one_callers_tools_see_none_of_anothers_copies(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = {"ALICE_KEY": "alice-key-52ab1e", "BOB_KEY": "bob-key-0c7f3d"}
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    people = {"callers": [{"name": "alice", "key_env": "ALICE_KEY"}, {"name": "bob", "key_env": "BOB_KEY"}]}
    source = project(harness.tmp_path / "project")
    workspace = WorkspaceSettings(mode="per_task", source=source)
    secret = f"alice-wrote-{uuid.uuid4().hex}"
    copies = harness.tmp_path / "state" / COPIES
    async with (
        httpx.AsyncClient(timeout=120, headers=bearer(keys["ALICE_KEY"])) as alice,
        httpx.AsyncClient(timeout=120, headers=bearer(keys["BOB_KEY"])) as bob,
        harness.serving(auto_approve=True, workspace=workspace, auth=people) as served,
    ):
        wrote = await stream(alice, served.jsonrpc, bash_params(f"echo {secret} > secret.txt", description="write"))
        assert final_state(wrote) == "TASK_STATE_COMPLETED"
        [hers] = copies.rglob("secret.txt")
        # the words grep looks for are never in the command itself (bob's own conversation would hold them)
        look = (
            f"ls -R {copies} > probe.txt 2>&1; echo ==CAT== >> probe.txt; cat {hers} >> probe.txt 2>&1; "
            f"echo ==GREP== >> probe.txt; grep -rls alice-wro''te- {harness.tmp_path} /tmp >> probe.txt 2>&1"
        )
        probed = await stream(bob, served.jsonrpc, bash_params(f"{look}; echo END >> probe.txt", description="look"))
        assert final_state(probed) == "TASK_STATE_COMPLETED"
    [found] = copies.rglob("probe.txt")
    listing, rest = found.read_text(errors="replace").split("==CAT==\n", 1)
    cat, grep = rest.split("==GREP==\n", 1)
    assert grep.rstrip().endswith("END") and "No such file" in cat and secret not in cat
    assert hers.parent.name not in listing and caller_folder("alice") not in listing, "her copy is not even listed"
    assert str(hers) not in grep and caller_folder("alice") not in grep, "grep found her words nowhere"
    assert found.parent.parent.name == caller_folder("bob") != hers.parent.parent.name
