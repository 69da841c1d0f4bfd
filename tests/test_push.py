"""Push notifications on the wire: webhooks registered on both bindings (1.0 and 0.3) reach a real receiver on
127.0.0.1 (allowed by push.allow_hosts) when a person is needed and at the end, with the config's token and
authentication; retried, never delaying the turn; refused where they would reach private addresses; kept with
the task across a restart (whose recovery pushes the end the lost turn owed) and scoped to the caller that
registered them."""

import asyncio
import time
from collections.abc import AsyncIterator
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import ShieldConfig
from a2a_wrapper.state.recovery import INTERRUPTED
from tests.conftest import SettingsFactory, serving
from tests.helpers.a2a_wire import V1, approval_of, rpc, stream, user_message
from tests.helpers.auth import AUTH, CI_KEY, KEYS, ORCHESTRATOR_KEY, bearer
from tests.helpers.tool_messages import answer_params, bash_params

pytestmark = pytest.mark.slow
LOOPBACK = {"allow_hosts": ["127.0.0.1"]}


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    answered: int

    @property
    def state(self) -> str | None:
        for kind in ("statusUpdate", "task"):
            if kind in self.body:
                return str(self.body[kind]["status"]["state"])
        return None


class Receiver:
    """A webhook receiver on a free loopback port: records every POST; per path, answers 503 the first
    `failures[path]` times and sleeps `delays[path]` seconds before answering."""

    def __init__(self) -> None:
        self.port = free_port()
        self.deliveries: list[Delivery] = []
        self.failures: dict[str, int] = {}
        self.delays: dict[str, float] = {}
        self._arrived = asyncio.Condition()
        self.app = Starlette(routes=[Route("/{name}", self._receive, methods=["POST"])])

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    async def _receive(self, request: Request) -> Response:
        name = request.path_params["name"]
        failing = self.failures.get(name, 0) > 0
        self.failures[name] = self.failures.get(name, 0) - 1
        status = 503 if failing else 200
        async with self._arrived:
            self.deliveries.append(Delivery(name, dict(request.headers), await request.json(), status))
            self._arrived.notify_all()
        await asyncio.sleep(self.delays.get(name, 0))
        return Response(status_code=status)

    def at(self, name: str) -> list[Delivery]:
        return [delivery for delivery in self.deliveries if delivery.path == name]

    async def wait_for(self, name: str, state: str, seconds: float = 60) -> Delivery:
        def found() -> Delivery | None:
            return next((d for d in self.at(name) if d.state == state and d.answered == 200), None)

        async with asyncio.timeout(seconds), self._arrived:
            await self._arrived.wait_for(lambda: found() is not None)
        delivery = found()
        assert delivery is not None
        return delivery


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    receiving = Receiver()
    config = uvicorn.Config(receiving.app, host="127.0.0.1", port=receiving.port, log_config=None, lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(10):
        while not server.started:  # noqa: ASYNC110 (uvicorn offers no started event)
            await asyncio.sleep(0.02)
    try:
        yield receiving
    finally:
        server.should_exit = True
        server.force_exit = True  # a receiver still sleeping on a slow answer is cut
        await task


def with_webhook(params: dict[str, Any], url: str, token: str, **config: Any) -> dict[str, Any]:
    params["configuration"] = {"taskPushNotificationConfig": {"url": url, "token": token, **config}}
    return params


async def configs_of(http: httpx.AsyncClient, served: Any, task_id: str, **headers: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTaskPushNotificationConfigs", "params": {"taskId": task_id}}
    return dict((await http.post(served.jsonrpc, json=body, headers={**V1, **headers})).json())


async def until_no_configs(http: httpx.AsyncClient, served: Any, task_id: str, **headers: str) -> None:
    async with asyncio.timeout(10):
        while (await configs_of(http, served, task_id, **headers))["result"].get("configs"):  # noqa: ASYNC110
            await asyncio.sleep(0.05)  # no event tells when the configs are dropped


async def test_a_person_needed_and_the_end_are_pushed_with_the_configs_credentials(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    settings = make_settings(shield=ShieldConfig(), push=LOOPBACK)
    async with serving(settings, offline_model) as served:
        card = (await http.get(served.url + "/.well-known/agent-card.json")).json()
        assert card["capabilities"]["pushNotifications"] is True
        inline = {"authentication": {"scheme": "Bearer", "credentials": "receiver-secret"}}
        params = with_webhook(bash_params("touch pushed.txt"), receiver.url("inline"), "tok-inline", **inline)
        asked = await stream(http, served.jsonrpc, params)
        approval, task = approval_of(asked), asked[0]["task"]

        waiting = await receiver.wait_for("inline", "TASK_STATE_INPUT_REQUIRED")
        assert waiting.headers["x-a2a-notification-token"] == "tok-inline"
        assert waiting.headers["authorization"] == "Bearer receiver-secret"
        assert waiting.body["statusUpdate"]["taskId"] == task["id"]
        assert waiting.body["statusUpdate"]["status"]["message"]["parts"], "the push says what is asked"

        created = await http.post(
            f"{served.rest}/tasks/{task['id']}/pushNotificationConfigs",
            json={"id": "rest", "url": receiver.url("rest"), "token": "tok-rest"},
            headers=V1,
        )
        assert created.status_code == 200, created.text
        assert created.json()["id"] == "rest", "a config without an id is the task's default one (the inline here)"
        listed = (await configs_of(http, served, task["id"]))["result"]["configs"]
        assert sorted(c["url"] for c in listed) == [receiver.url("inline"), receiver.url("rest")]

        answer = answer_params(task, data={"approval": approval["id"], "option": "allow_once"})
        await stream(http, served.jsonrpc, answer)
        for name, token in (("inline", "tok-inline"), ("rest", "tok-rest")):
            ended = await receiver.wait_for(name, "TASK_STATE_COMPLETED")
            assert ended.headers["x-a2a-notification-token"] == token
        await until_no_configs(http, served, task["id"])

    states = [d.state for d in receiver.at("inline")]
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert [d.state for d in receiver.at("rest")] == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert "authorization" not in receiver.at("rest")[0].headers


async def test_a_webhook_a_retry_carries_is_checked_and_kept_for_the_first_attempts_task(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    async with serving(make_settings(shield=ShieldConfig(), push=LOOPBACK), offline_model) as served:
        params = bash_params("touch retried.txt")
        asked = await stream(http, served.jsonrpc, params)  # the first attempt, without a webhook: it waits
        approval, task = approval_of(asked), asked[0]["task"]

        private = await rpc(
            http, served.jsonrpc, "SendMessage", with_webhook(deepcopy(params), "http://10.1.2.3/h", "t")
        )
        assert private["error"]["code"] == -32602 and "10.1.2.3, a private address" in private["error"]["message"]
        again = await rpc(
            http, served.jsonrpc, "SendMessage", with_webhook(deepcopy(params), receiver.url("r"), "tok-r")
        )
        assert again["result"]["task"]["id"] == task["id"], "a retry: the first attempt's task"
        listed = (await configs_of(http, served, task["id"]))["result"]["configs"]
        assert [(c["url"], c["token"]) for c in listed] == [(receiver.url("r"), "tok-r")], "kept, the bad one not"

        await stream(
            http, served.jsonrpc, answer_params(task, data={"approval": approval["id"], "option": "allow_once"})
        )
        ended = await receiver.wait_for("r", "TASK_STATE_COMPLETED")
        assert ended.headers["x-a2a-notification-token"] == "tok-r"
        assert ended.body["statusUpdate"]["taskId"] == task["id"]


async def test_retried_with_backoff_and_a_slow_receiver_never_delays_the_turn(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    receiver.failures["flaky"] = 2
    receiver.delays["slow"] = 60
    settings = make_settings(auto_approve=True, push={**LOOPBACK, "timeout": 1, "attempts": 3})
    async with serving(settings, offline_model) as served:
        started = time.monotonic()
        hello = {"message": user_message("hi")}
        slow = await stream(http, served.jsonrpc, with_webhook(hello, receiver.url("slow"), "t"))
        assert slow[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert time.monotonic() - started < 30, "the turn waited for a receiver that sleeps 60 s"

        await stream(http, served.jsonrpc, with_webhook({"message": user_message("hi")}, receiver.url("flaky"), "t"))
        await receiver.wait_for("flaky", "TASK_STATE_COMPLETED")

    flaky = receiver.at("flaky")
    assert [d.answered for d in flaky] == [503, 503, 200, 200]
    assert flaky[0].body == flaky[1].body == flaky[2].body, "the same event, tried three times"
    assert [d.state for d in flaky[2:]] == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert receiver.at("slow"), "the slow receiver was called"


REFUSED = [
    ("http://127.0.0.2:9/hook", "127.0.0.2, a loopback address"),
    ("http://10.1.2.3/hook", "10.1.2.3, a private address"),
    ("http://169.254.169.254/latest/meta-data", "a link-local address"),
    ("http://[::1]:9/hook", "::1, a loopback address"),
    ("file:///etc/passwd", "only http and https"),
    ("http://user:pw@example.com/hook", "put credentials in `authentication`"),
]


async def test_webhooks_to_private_addresses_are_refused_on_both_bindings(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(auto_approve=True, push=LOOPBACK), offline_model) as served:
        task = (await stream(http, served.jsonrpc, {"message": user_message("hi")}))[0]["task"]
        configs = f"{served.rest}/tasks/{task['id']}/pushNotificationConfigs"
        for url, reason in REFUSED:
            create = {"taskId": task["id"], "url": url}
            answer = await rpc(http, served.jsonrpc, "CreateTaskPushNotificationConfig", create)
            assert answer["error"]["code"] == -32602, (url, answer)
            assert reason in answer["error"]["message"], (url, answer)
            rest = await http.post(configs, json={"url": url}, headers=V1)
            assert rest.status_code == 400 and reason in rest.text, (url, rest.text)
            message = with_webhook({"message": user_message("hi")}, url, "t")
            inline = await rpc(http, served.jsonrpc, "SendMessage", message)
            assert inline["error"]["code"] == -32602 and reason in inline["error"]["message"], (url, inline)
        assert not (await configs_of(http, served, task["id"]))["result"].get("configs")


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


async def test_configs_belong_to_their_caller_and_outlive_a_restart_which_pushes_the_lost_turns_end(
    make_settings: SettingsFactory,
    offline_model: OfflineModel,
    http: httpx.AsyncClient,
    receiver: Receiver,
    keys: None,
) -> None:
    settings = make_settings(shield=ShieldConfig(), push=LOOPBACK, auth=AUTH)
    orchestrator, ci = bearer(ORCHESTRATOR_KEY), bearer(CI_KEY)
    params = with_webhook(bash_params("touch later.txt"), receiver.url("mine"), "tok-mine")
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    async with serving(settings, offline_model) as served:
        sent = (await http.post(served.jsonrpc, json=body, headers={**V1, **orchestrator})).json()
        task_id = sent["result"]["task"]["id"]
        await receiver.wait_for("mine", "TASK_STATE_INPUT_REQUIRED")
        assert len((await configs_of(http, served, task_id, **orchestrator))["result"]["configs"]) == 1
        other = await configs_of(http, served, task_id, **ci)
        assert other["error"]["code"] == -32001, "another caller does not even see the task"
        delete = {"taskId": task_id, "id": task_id}
        deleted = await http.post(
            served.jsonrpc,
            json={"jsonrpc": "2.0", "id": 2, "method": "DeleteTaskPushNotificationConfig", "params": delete},
            headers={**V1, **ci},
        )
        assert deleted.json()["error"]["code"] == -32001

    async with serving(settings, offline_model) as served:  # the task waited for a person: its turn is lost
        ended = await receiver.wait_for("mine", "TASK_STATE_FAILED")
        assert ended.headers["x-a2a-notification-token"] == "tok-mine", "the config, token included, was kept"
        assert ended.body["statusUpdate"]["taskId"] == task_id
        assert ended.body["statusUpdate"]["status"]["message"]["parts"] == [{"text": INTERRUPTED}]
        await until_no_configs(http, served, task_id, **orchestrator)
        got = (await http.post(served.jsonrpc, json=_get(task_id), headers={**V1, **orchestrator})).json()
        assert got["result"]["status"]["state"] == "TASK_STATE_FAILED"
    states = [d.state for d in receiver.at("mine")]
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_FAILED"]

    async with serving(make_settings(auto_approve=True, push={"enabled": False}), offline_model) as served:
        card = (await http.get(served.url + "/.well-known/agent-card.json")).json()
        assert card["capabilities"].get("pushNotifications", False) is False
        task = (await stream(http, served.jsonrpc, {"message": user_message("hi")}))[0]["task"]
        answer = await rpc(http, served.jsonrpc, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
        assert answer["error"]["code"] == -32003


def _get(task_id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": task_id}}


async def test_with_push_off_a_message_that_registers_a_webhook_is_refused_and_runs_nothing(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    hook = "http://127.0.0.1:9/hook"
    async with serving(make_settings(auto_approve=True, push={"enabled": False}), offline_model) as served:
        for method in ("SendMessage", "SendStreamingMessage"):
            sent = await rpc(http, served.jsonrpc, method, with_webhook({"message": user_message("hi")}, hook, "t"))
            assert sent["error"]["code"] == -32003, (method, sent)
            assert "push.enabled: false" in sent["error"]["message"], sent
        rest = await http.post(
            f"{served.rest}/message:send", json=with_webhook({"message": user_message("hi")}, hook, "t"), headers=V1
        )
        assert rest.status_code == 400, rest.text
        assert rest.json()["error"]["details"][0]["reason"] == "PUSH_NOTIFICATION_NOT_SUPPORTED", rest.text
        message03 = {"kind": "message", "messageId": "m03", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}
        params03 = {"message": message03, "configuration": {"pushNotificationConfig": {"url": hook}}}
        assert (await rpc03(http, served.jsonrpc, "message/send", params03))["error"]["code"] == -32003

        listed = await rpc(http, served.jsonrpc, "ListTasks", {})
        assert listed["result"].get("tasks", []) == [], "nothing ran"
        plain = await rpc(http, served.jsonrpc, "SendMessage", {"message": user_message("hi")})
        assert plain["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", "without a webhook it runs"


async def rpc03(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return dict((await http.post(url, json=body)).json())  # 0.3: no A2A-Version header


async def test_the_0_3_methods_and_paths_set_get_list_and_delete(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    hook = "http://127.0.0.1:9/hook"
    async with serving(make_settings(auto_approve=True, push=LOOPBACK), offline_model) as served:
        task_id = (await stream(http, served.jsonrpc, {"message": user_message("hi")}))[0]["task"]["id"]
        config = {"id": "v03", "url": hook, "token": "t03"}
        set_ = await rpc03(
            http,
            served.jsonrpc,
            "tasks/pushNotificationConfig/set",
            {"taskId": task_id, "pushNotificationConfig": config},
        )
        assert set_["result"]["pushNotificationConfig"]["url"] == hook, set_
        got = await rpc03(
            http, served.jsonrpc, "tasks/pushNotificationConfig/get", {"id": task_id, "pushNotificationConfigId": "v03"}
        )
        assert got.get("result", {}).get("pushNotificationConfig", {}).get("token") == "t03", got

        rest03 = f"{served.rest}/v1/tasks/{task_id}/pushNotificationConfigs"
        created = await http.post(
            rest03,
            json={
                "parent": f"tasks/{task_id}",
                "configId": "r03",
                "config": {"pushNotificationConfig": {"id": "r03", "url": hook}},
            },
        )
        assert created.status_code == 200, created.text
        listed = await rpc03(http, served.jsonrpc, "tasks/pushNotificationConfig/list", {"id": task_id})
        assert sorted(c["pushNotificationConfig"]["id"] for c in listed["result"]) == ["r03", "v03"], listed
        refused = await rpc03(
            http,
            served.jsonrpc,
            "tasks/pushNotificationConfig/set",
            {"taskId": task_id, "pushNotificationConfig": {"url": "http://10.0.0.1/"}},
        )
        assert "a private address" in refused["error"]["message"], refused

        gone = await rpc03(
            http,
            served.jsonrpc,
            "tasks/pushNotificationConfig/delete",
            {"id": task_id, "pushNotificationConfigId": "v03"},
        )
        assert "error" not in gone and gone.get("result") is None, gone
        fetched = await http.get(f"{rest03}/r03")
        assert fetched.status_code == 200 and "r03" in fetched.text, fetched.text
        not_served = await http.delete(f"{rest03}/r03")  # a2a-sdk 1.3.0 serves no 0.3 REST delete
        assert (not_served.status_code, not_served.headers["allow"]) == (405, "GET, HEAD")
        await rpc03(
            http,
            served.jsonrpc,
            "tasks/pushNotificationConfig/delete",
            {"id": task_id, "pushNotificationConfigId": "r03"},
        )
        assert (await rpc03(http, served.jsonrpc, "tasks/pushNotificationConfig/list", {"id": task_id}))["result"] == []
