"""Hot reload as a user sees it: a changed config restarts only its agent; new ones start, removed ones stop."""

import asyncio
import shutil
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import SettingsFactory
from tests.helpers.fleet_process import (
    FleetProcess,
    agent_config,
    agents,
    alive,
    backend_pid,
    processes_under,
    running,
    wait_until,
)

pytestmark = pytest.mark.slow


def edit(config: Path, change: dict[str, object]) -> None:
    data = yaml.safe_load(config.read_text())
    for section, values in change.items():
        data[section] = {**data.get(section, {}), **values} if isinstance(values, dict) else values
    config.write_text(yaml.safe_dump(data))


async def test_an_edited_config_restarts_only_its_agent_and_an_invalid_edit_keeps_it(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    settings = make_settings()
    alpha = agent_config(tmp_path / "agents", "alpha", settings)
    beta = agent_config(tmp_path / "agents", "beta", settings)
    fleet = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    try:
        before = await wait_until(http, fleet, running("alpha", "beta"))
        assert await agents(http, fleet.registry, "?skill=triage") == {}

        edit(alpha, {"card": {"skills": [{"id": "triage", "name": "Triage", "tags": ["bugs"]}]}})
        after = await wait_until(
            http, fleet, lambda listed: running("alpha")(listed) and listed["alpha"]["pid"] != before["alpha"]["pid"]
        )
        assert after["beta"]["pid"] == before["beta"]["pid"], "an edit restarts only the agent it touches"
        assert after["alpha"]["restarts"] == 0, "a reload is not a crash"
        assert not alive(before["alpha"]["pid"]) and not alive(backend_pid(before["alpha"]))
        assert list(await agents(http, fleet.registry, "?skill=bugs")) == ["alpha"]
        await fleet.wait_for_line(r"\[alpha\] its config changed; restarting it")

        original = beta.read_text()
        edit(beta, {"server": {"port": "eighty"}})
        line = await fleet.wait_for_line(r"server\.port: .*'eighty'")
        assert str(beta) in line
        await fleet.wait_for_line(r"\[beta\] keeps running with its previous config")
        beta.write_text(original)  # back as it was: nothing to apply
        await asyncio.sleep(2)
        kept = await agents(http, fleet.registry)
        assert kept["beta"]["state"] == "running" and kept["beta"]["pid"] == before["beta"]["pid"]
        assert kept["alpha"]["pid"] == after["alpha"]["pid"]
    finally:
        assert await fleet.stop() == 0, fleet.log()
    assert processes_under(tmp_path) == []


async def test_a_new_agent_folder_starts_an_agent_and_a_removed_one_stops_it(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    settings = make_settings()
    agent_config(tmp_path / "agents", "first", settings)
    fleet = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    try:
        before = await wait_until(http, fleet, running("first"))
        agent_config(tmp_path / "agents", "second", settings)
        added = await wait_until(http, fleet, running("first", "second"))
        assert added["first"]["pid"] == before["first"]["pid"]

        shutil.rmtree(tmp_path / "agents" / "first")
        left = await wait_until(http, fleet, lambda listed: list(listed) == ["second"])
        assert left["second"]["pid"] == added["second"]["pid"]
        assert not alive(before["first"]["pid"]) and not alive(backend_pid(before["first"]))
        assert (await http.get(fleet.registry + "/agents/first")).status_code == 404
    finally:
        assert await fleet.stop() == 0, fleet.log()
    assert processes_under(tmp_path) == []
