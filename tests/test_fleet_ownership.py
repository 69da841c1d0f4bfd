"""A run owns its state folders: a second holder is refused with a sentence naming the first one's pid and command."""

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from a2a_wrapper.state.lock import OWNER, FolderBusy, FolderLock
from tests.conftest import SettingsFactory
from tests.helpers.fleet_process import FleetProcess, agent_config, running, wait_until

HOLD = (
    "import sys, time; from pathlib import Path; from a2a_wrapper.state.lock import FolderLock; "
    "FolderLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)"
)


def test_a_second_lock_names_the_holder_until_it_lets_go(tmp_path: Path) -> None:
    first = FolderLock(tmp_path / "state")
    first.acquire()
    assert (tmp_path / "state" / OWNER).read_text().startswith(f"{os.getpid()} ")
    second = FolderLock(tmp_path / "state")
    with pytest.raises(FolderBusy) as refused:
        second.acquire()
    assert str(refused.value).startswith(f"{tmp_path / 'state'} is in use by pid {os.getpid()} (")
    first.release()
    assert (tmp_path / "state" / OWNER).read_text() == ""
    second.acquire()
    second.release()


def test_a_holder_that_dies_leaves_the_folder_free(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            with pytest.raises(FolderBusy, match=rf"in use by pid {holder.pid} \("):
                FolderLock(tmp_path).acquire()
        finally:
            holder.kill()
    lock = FolderLock(tmp_path)
    lock.acquire()  # the kernel let go with the process; the stale line in the file does not matter
    lock.release()


def test_the_processes_a_holder_starts_do_not_hold_its_lock(tmp_path: Path) -> None:
    lock = FolderLock(tmp_path)
    lock.acquire()
    with subprocess.Popen(["sleep", "60"]) as child:
        try:
            lock.release()
            again = FolderLock(tmp_path)
            again.acquire()
            again.release()
        finally:
            child.kill()


@pytest.mark.slow
async def test_a_second_fleet_on_the_same_agents_is_refused_and_the_first_keeps_running(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    config = agent_config(tmp_path / "agents", "alpha", make_settings())
    first = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    try:
        before = await wait_until(http, first, running("alpha"))
        await first.wait_for_line(rf"1 agent running \(registry at {first.registry}/agents\)$")
        second = await FleetProcess.start("fleet", str(tmp_path / "agents"))
        async with asyncio.timeout(30):
            assert await second.process.wait() == 1
        await second.stop()
        assert (
            f"{tmp_path / 'state' / 'alpha'} is in use by pid {first.process.pid} "
            f"({sys.executable} -m a2a_wrapper fleet {tmp_path / 'agents'} --port {first.registry.rsplit(':')[-1]})"
        ) in second.log()
        assert f"; agent 'alpha' ({config}) cannot run twice on one state folder" in second.log()
        after = await wait_until(http, first, running("alpha"))
        assert after["alpha"]["pid"] == before["alpha"]["pid"] and after["alpha"]["restarts"] == 0
    finally:
        assert await first.stop(signal.SIGINT) == 0, first.log()
