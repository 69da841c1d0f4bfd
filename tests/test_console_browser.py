"""The console in a real browser (headless chromium driven by Playwright), as an operator uses it.

A bash call that the rules put to a person waits for approval; the operator signs in, sees it on the page with
its command and rule, and allows it once, denies it, or lets it expire. The caller, subscribed to its task, sees
the stream go on to its end; the workspace on disk shows whether the command ran. A screenshot of each state is
saved (tests/helpers/browser.py says where).
"""

import asyncio
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from playwright.async_api import Page, expect

from a2a_wrapper.config.settings import AgentSettings
from tests.helpers.a2a_wire import approval_of, stream, subscription
from tests.helpers.browser import browser_page, needs_chromium, screenshot
from tests.helpers.demo_process import Demo, free_block
from tests.helpers.fleet_process import FleetProcess, agent_config, port_of, wait_until
from tests.helpers.tool_messages import bash_params

pytestmark = [pytest.mark.slow, pytest.mark.alone, needs_chromium]

OPERATOR = "alice"
KEY_ENV = "CONSOLE_TEST_ALICE_KEY"


def states(events: list[dict[str, Any]]) -> list[str]:
    return [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e]


async def sign_in_with_link(page: Page, link: str) -> None:
    """The newcomer's way in: the demo's one-time link opened; a second opening is refused on a page saying why."""
    await page.goto(link)
    await expect(page.get_by_text("Signed in as owner")).to_be_visible(timeout=10_000)
    await expect(page.locator("#banner")).to_contain_text("one-time link")


async def sign_in(page: Page, console: str, key: str) -> None:
    await page.goto(console)
    await page.fill("input[name=name]", OPERATOR)
    await page.fill("input[name=key]", key)
    await page.click("button[type=submit]")
    await expect(page.get_by_text(f"Signed in as {OPERATOR}")).to_be_visible(timeout=10_000)


async def asked(http: httpx.AsyncClient, jsonrpc: str, command: str) -> dict[str, Any]:
    """The caller's bash call, ended in input-required: the approval it waits on, with its task id."""
    events = await stream(http, jsonrpc, bash_params(command))
    approval = approval_of(events)
    return {**approval, "taskId": events[0]["task"]["id"]}


def row(page: Page, approval_id: str) -> Any:
    return page.locator(f'[data-approval-id="{approval_id}"]')


async def decide_on_the_page(
    page: Page, http: httpx.AsyncClient, jsonrpc: str, command: str, option: str, shot: str, operator: str = OPERATOR
) -> list[dict[str, Any]]:
    """The approval seen on the page (command and rule), answered there; the caller's subscription to its end."""
    approval = await asked(http, jsonrpc, command)
    watching = asyncio.create_task(subscription(http, jsonrpc, approval["taskId"]))
    waiting = row(page, approval["id"])
    await expect(waiting).to_be_visible(timeout=15_000)
    await expect(waiting).to_contain_text(command)
    await expect(waiting).to_contain_text(approval["rule"])
    await screenshot(page, f"{shot}-waiting")
    await waiting.locator(f'[data-option="{option}"]').click()
    await expect(waiting).to_have_count(0, timeout=15_000)
    async with asyncio.timeout(60):
        events = await watching
    await expect(page.locator("#audit")).to_contain_text(f"console:{operator}", timeout=15_000)
    await screenshot(page, f"{shot}-decided")
    return events


@pytest.mark.timeout(480)
async def test_the_demos_printed_link_signs_in_once_and_the_owner_allows_and_denies(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    port = free_block(7)  # the registry, its three agents, their gRPC ports
    demo = await Demo.start(tmp_path, port)
    try:
        await demo.printed(r"^all 3 agents running", 240)
        console = await demo.printed(r"^console: ", 1)
        assert console.split()[1] == f"http://127.0.0.1:{port}/console"
        link = (await demo.printed(r"^console sign-in: ", 1)).split()[2]
        workspace = tmp_path / "a2a-wrapper" / f"demo-{port}" / "opencode-coder" / "workspace"
        jsonrpc = f"http://127.0.0.1:{port + 1}/a2a/jsonrpc"
        async with browser_page() as page:
            await page.goto(f"http://127.0.0.1:{port}/console")  # this machine, no session: how to sign in
            await expect(page.get_by_text("one-time link the fleet printed")).to_be_visible()
            await screenshot(page, "link-needed")
            await sign_in_with_link(page, link)
            await screenshot(page, "signed-in-by-link")

            events = await decide_on_the_page(
                page, http, jsonrpc, "touch allowed.txt", "allow_once", "allow-once", operator="owner"
            )
            assert states(events)[-1] == "TASK_STATE_COMPLETED", events
            assert (workspace / "allowed.txt").exists(), "the allowed command ran in the agent's workspace"

            events = await decide_on_the_page(page, http, jsonrpc, "touch denied.txt", "deny", "deny", operator="owner")
            assert states(events)[-1] in {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}, events
            assert not (workspace / "denied.txt").exists(), "the denied command never ran"

        async with browser_page() as other:  # another browser, the same link: refused, on a page saying why
            answer = await other.goto(link)
            assert answer is not None and answer.status == 401
            await expect(other.get_by_text("it was used already: each link signs in once")).to_be_visible()
            await screenshot(other, "link-used")
    finally:
        await demo.stop()


@pytest.mark.timeout(300)
async def test_an_approval_nobody_answers_expires_on_the_page(
    tmp_path: Path, http: httpx.AsyncClient, make_settings: Any
) -> None:
    key = secrets.token_urlsafe(24)
    settings: AgentSettings = make_settings()
    shield = {"defaults": {"read": "allow"}, "ask_timeout": 8}
    config = agent_config(tmp_path / "agents", "expiring", settings, auto_approve=False, shield=shield)
    fleet_file = tmp_path / "fleet.yaml"
    operators = [{"name": OPERATOR, "key_env": KEY_ENV}]
    fleet_file.write_text(yaml.safe_dump({"registry": {"operators": operators}, "agents": [{"config": str(config)}]}))
    fleet = await FleetProcess.start("fleet", str(fleet_file), env_extra={KEY_ENV: key})
    try:
        await wait_until(http, fleet, lambda listed: listed.get("expiring", {}).get("state") == "running")
        jsonrpc = f"http://127.0.0.1:{port_of(config)}/a2a/jsonrpc"
        workspace = config.parent / "workspace"
        async with browser_page() as page:
            await sign_in(page, f"{fleet.registry}/console", key)
            approval = await asked(http, jsonrpc, "touch expired.txt")
            watching = asyncio.create_task(subscription(http, jsonrpc, approval["taskId"]))
            waiting = row(page, approval["id"])
            await expect(waiting).to_contain_text("touch expired.txt", timeout=15_000)
            await screenshot(page, "expiry-waiting")
            await expect(waiting).to_have_count(0, timeout=30_000)  # nobody answered: the deadline did
            async with asyncio.timeout(60):
                events = await watching
            await expect(page.locator("#audit")).to_contain_text("deadline", timeout=15_000)
            await screenshot(page, "expired")
        assert states(events)[-1] in {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}, events
        assert not (workspace / "expired.txt").exists(), "an expired approval is a deny"
    finally:
        await fleet.stop()
