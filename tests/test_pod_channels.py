"""The backend in a pod of its own, run here for real: its pod is a network namespace joined to this one by a veth
pair (a pod network of two addresses), and the NetworkPolicy `deploy kubernetes --backend-pod` renders for it is
enforced there as a CNI would, with iptables rules made from the rendered policy (its ports, its peer: the
wrapper's pod's address). No cluster runs here; this is the network a cluster gives the two pods.

The wrapper's side runs in this process: the real egress proxy (the only endpoint it allows is a "model" on this
side's loopback), its gate on the wrapper pod's address, the wrapper's own port beside it. The backend's side runs
`a2a-wrap channel` and `a2a-wrap sidecar` in the namespace. Then a tool in the namespace tries what an escaping
agent would — the wrapper's port, another address, the outside, the gate without the token — and the test looks
at what each dial got, at the gate's refusals and at the proxy's decisions; and the wrapper starts a command and
reaches a served port in the backend's pod through the channels.
"""

import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from a2a_wrapper.config.runtimes import SidecarRuntime
from a2a_wrapper.deploy.backend_pod import BACKEND_GATE_PORT, WRAPPER_GATE_PORT, backend_network_policy
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.sandbox import stand_in
from a2a_wrapper.sandbox.channel import REPORT_EVERY, Forward, Gate, Refusal, unix_opener
from a2a_wrapper.sandbox.egress import Destination, EgressDecision, EgressPolicy, EgressProxy
from a2a_wrapper.sandbox.plan import EGRESS_SOCKET
from a2a_wrapper.sandbox.pod_channels import PORT_PREFIX, SIDECAR
from a2a_wrapper.state.audit import recent
from tests.helpers.a2a_wire import final_state, stream
from tests.helpers.behaviour import BACKENDS, Harness
from tests.helpers.listener import listener
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("iptables") is None,
    reason="needs root, ip and iptables: the backend's pod is a network namespace",
)
REPO = Path(__file__).parent.parent
OUTSIDE = "192.0.2.10"  # TEST-NET-1: an address outside the pod network, routed out through the wrapper's side


@dataclass
class PodNetwork:
    namespace: str
    wrapper: str  # the wrapper's pod's address
    backend: str  # the backend's pod's address
    backend_log: str = ""  # what `a2a-wrap channel` logged, once stopped

    def run(self, *argv: str, **options: Any) -> "subprocess.Popen[str]":
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        return subprocess.Popen(["ip", "netns", "exec", self.namespace, *argv], env=env, text=True, **options)


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


@pytest.fixture
def pods() -> Iterator[PodNetwork]:
    suffix = secrets.token_hex(3)
    namespace, outer, inner = f"a2a-pod-{suffix}", f"k8w{suffix}", f"k8b{suffix}"
    net = f"10.{200 + int(suffix[:2], 16) % 50}.{int(suffix[2:4], 16)}"
    pod = PodNetwork(namespace, f"{net}.1", f"{net}.2")
    _ip("netns", "add", namespace)
    try:
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", namespace)
        _ip("addr", "add", f"{pod.wrapper}/30", "dev", outer)
        _ip("link", "set", outer, "up")
        _ip("-n", namespace, "addr", "add", f"{pod.backend}/30", "dev", inner)
        _ip("-n", namespace, "link", "set", inner, "up")
        _ip("-n", namespace, "link", "set", "lo", "up")
        _ip("-n", namespace, "route", "add", "default", "via", pod.wrapper)  # as a pod's: everything leaves by it
        yield pod
    finally:
        subprocess.run(["ip", "netns", "del", namespace], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", outer], check=False, capture_output=True)


def enforce(policy: dict[str, Any], pod: PodNetwork) -> None:
    """The backend's NetworkPolicy as a CNI enforces it in the pod's namespace: each rule's ports, to or from its
    peer (the wrapper's pod, the only peer it names), and every other new connection refused."""
    spec = policy["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    rules = []
    for chain, direction, side, entries in (
        ("OUTPUT", "to", "-d", spec["egress"]),
        ("INPUT", "from", "-s", spec["ingress"]),
    ):
        rules.append([chain, "-o" if chain == "OUTPUT" else "-i", "lo", "-j", "ACCEPT"])
        rules.append([chain, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"])
        for entry in entries:
            assert [peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for peer in entry[direction]] == [
                "agent"
            ]
            for port in entry["ports"]:
                rules.append(
                    [
                        chain,
                        side,
                        pod.wrapper,
                        "-p",
                        port["protocol"].lower(),
                        "--dport",
                        str(port["port"]),
                        "-j",
                        "ACCEPT",
                    ]
                )
        rules.append([chain, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"])
        rules.append([chain, "-j", "REJECT"])
    for rule in rules:
        subprocess.run(["ip", "netns", "exec", pod.namespace, "iptables", "-A", *rule], check=True, capture_output=True)


PROBE = r"""
import json, socket, sys
def dial(target):
    kind, *rest = target
    connection = socket.socket(socket.AF_UNIX if kind == "unix" else socket.AF_INET)
    connection.settimeout(4)
    try:
        connection.connect(rest[0] if kind == "unix" else (rest[0], rest[1]))
        connection.sendall(rest[-1].encode())
        return "answered: " + connection.recv(4096).decode(errors="replace")
    except OSError as exc:
        return "failed: " + type(exc).__name__
    finally:
        connection.close()
print(json.dumps([dial(target) for target in json.loads(sys.argv[1])]))
"""


def probe(pod: PodNetwork, *targets: list[Any]) -> list[str]:
    """What each dial got, made by a process in the backend's pod (as a tool there would)."""
    tool = pod.run(sys.executable, "-I", "-c", PROBE, json.dumps(targets), stdout=subprocess.PIPE)
    out, _ = tool.communicate(timeout=60)
    return list(json.loads(out))


@asynccontextmanager
async def wrapper_side(pod: PodNetwork, folder: Path, token: bytes) -> AsyncIterator[dict[str, Any]]:
    """The egress proxy (one endpoint: a model on this side's loopback) behind the gate, and the wrapper's own port,
    all on the wrapper pod's address."""
    seen: dict[str, Any] = {"refusals": [], "decisions": []}

    async def record(decision: EgressDecision, wait_ms: float) -> None:
        seen["decisions"].append(decision)

    reached_wrapper: list[str] = []

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached_wrapper.append(writer.get_extra_info("peername")[0])
        writer.close()

    async with listener() as (model_port, reached_model):
        proxy = EgressProxy(folder / EGRESS_SOCKET, EgressPolicy({Destination("127.0.0.1", model_port)}, None), record)
        await proxy.start()
        names = {EGRESS_SOCKET: unix_opener(proxy.socket_path)}
        gate = Gate(pod.wrapper, WRAPPER_GATE_PORT, token, names.get, seen["refusals"].append)
        await gate.start()
        own = await asyncio.start_server(accept, pod.wrapper, 0)  # the A2A port, on the pod's address as in a pod
        own_port = own.sockets[0].getsockname()[1]
        seen.update(model_port=model_port, reached_model=reached_model, reached_wrapper=reached_wrapper, own=own_port)
        try:
            yield seen
        finally:
            own.close()
            await gate.stop()
            await proxy.stop()


@asynccontextmanager
async def backend_side(pod: PodNetwork, folder: Path, token: bytes) -> AsyncIterator[Path]:
    """`a2a-wrap sidecar` and `a2a-wrap channel` in the backend's pod; the channel's sockets folder."""
    token_file, folders, sockets = folder / "token", folder / "backend", folder / "sockets"
    token_file.write_bytes(token + b"\n")
    folders.mkdir()
    sockets.mkdir()
    cli = [sys.executable, "-m", "a2a_wrapper"]
    sidecar = pod.run(*cli, "sidecar", "--folders", str(folders), stderr=subprocess.PIPE)
    channel = pod.run(
        *cli, "channel", "--token-file", str(token_file), "--listen", f"{pod.backend}:{BACKEND_GATE_PORT}",
        "--wrapper", f"{pod.wrapper}:{WRAPPER_GATE_PORT}", "--folders", str(folders), "--sockets", str(sockets),
        "--forward", EGRESS_SOCKET, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = asyncio.get_running_loop().time() + 60  # two CLI starts, on a busy machine
        while not ((sockets / EGRESS_SOCKET).exists() and (folders / "sidecar.sock").exists()):
            assert channel.poll() is None and sidecar.poll() is None, "the backend's side exited"
            assert asyncio.get_running_loop().time() < deadline, "the backend's side did not start in 60 s"
            await asyncio.sleep(0.05)
        yield sockets
    finally:
        logs = []
        for process in (channel, sidecar):
            process.terminate()
            logs.append(process.communicate(timeout=10)[1])
        pod.backend_log = logs[0]


async def test_a_tool_in_the_backends_pod_reaches_only_its_channels(pods: PodNetwork, tmp_path: Path) -> None:
    token = secrets.token_hex(32).encode()
    wrapper_folder, backend_folder = tmp_path / "wrapper", tmp_path / "backend-pod"
    wrapper_folder.mkdir()
    backend_folder.mkdir()
    # Without the policy the pod network reaches the wrapper's own port: the dials below can fail for the policy.
    async with wrapper_side(pods, wrapper_folder, token) as seen:
        assert (await asyncio.to_thread(probe, pods, ["tcp", pods.wrapper, seen["own"], ""])) == ["answered: "]
        assert seen["reached_wrapper"] == [pods.backend]
    enforce(backend_network_policy("coder", "agents"), pods)
    async with wrapper_side(pods, wrapper_folder, token) as seen, backend_side(pods, backend_folder, token) as sockets:
        model = f"127.0.0.1:{seen['model_port']}"
        wrapper_port = [pods.wrapper, seen["own"], ""]
        dials = await asyncio.to_thread(
            probe,
            pods,
            ["unix", str(sockets / EGRESS_SOCKET), f"CONNECT {model} HTTP/1.1\r\n\r\nping"],
            ["unix", str(sockets / EGRESS_SOCKET), f"CONNECT 127.0.0.1:{seen['own']} HTTP/1.1\r\n\r\n"],
            ["tcp", *wrapper_port],
            ["tcp", pods.wrapper, 22, ""],
            ["tcp", OUTSIDE, 443, ""],
            ["tcp", pods.wrapper, WRAPPER_GATE_PORT, f"a2a-channel {EGRESS_SOCKET} {'0' * 64}\n"],
            ["tcp", pods.wrapper, WRAPPER_GATE_PORT, f"CONNECT {model} HTTP/1.1\r\n\r\n"],
            ["tcp", pods.wrapper, WRAPPER_GATE_PORT, f"a2a-channel {SIDECAR} {token.decode()}\n"],
        )
        await asyncio.sleep(REPORT_EVERY)
        (later,) = await asyncio.to_thread(probe, pods, ["tcp", pods.wrapper, WRAPPER_GATE_PORT, "a2a-channel x y\n"])
    through_proxy, to_wrapper_port, wrapper_port_direct, other_port, outside, no_token, raw, other_name = dials
    assert through_proxy.startswith("answered: HTTP/1.1 200") and seen["reached_model"] == [b"ping"]
    assert to_wrapper_port.startswith("answered: HTTP/1.1 403"), to_wrapper_port
    assert [str(decision.destination) for decision in seen["decisions"]] == [model, f"127.0.0.1:{seen['own']}"]
    assert [decision.allowed for decision in seen["decisions"]] == [True, False]
    assert wrapper_port_direct == "failed: ConnectionRefusedError" and seen["reached_wrapper"] == []
    assert other_port == "failed: ConnectionRefusedError"
    assert outside == "failed: ConnectionRefusedError"
    assert no_token == "answered: refused: a wrong token\n"
    assert raw == "answered: refused: not a channel's head (`a2a-channel NAME TOKEN`)\n"
    assert other_name == f"answered: refused: no channel named '{SIDECAR}' here\n"
    assert later == "answered: refused: a wrong token\n"
    # Reported (logged, audited) at most once a second: the two refused right after the first are counted in the next.
    refusals: list[Refusal] = seen["refusals"]
    assert [(refusal.peer.split(":")[0], refusal.name, refusal.reason, refusal.unreported) for refusal in refusals] == [
        (pods.backend, EGRESS_SOCKET, "a wrong token", 0),
        (pods.backend, "x", "a wrong token", 2),
    ]


async def test_the_wrapper_starts_and_reaches_the_backend_in_its_pod_only_with_the_token(
    pods: PodNetwork, tmp_path: Path
) -> None:
    token = secrets.token_hex(32).encode()
    wrapper_folder, backend_folder = tmp_path / "wrapper", tmp_path / "backend-pod"
    wrapper_folder.mkdir()
    backend_folder.mkdir()
    enforce(backend_network_policy("coder", "agents"), pods)
    served = pods.run(sys.executable, "-I", "-m", "http.server", "--bind", "127.0.0.1", "4096", cwd=str(backend_folder))
    gate = (pods.backend, BACKEND_GATE_PORT)
    async with wrapper_side(pods, wrapper_folder, token), backend_side(pods, backend_folder, token):
        forwards = [
            Forward(wrapper_folder / "sidecar.sock", *gate, SIDECAR, token),
            Forward(wrapper_folder / "opencode.sock", *gate, f"{PORT_PREFIX}4096", token),
            Forward(wrapper_folder / "forged.sock", *gate, f"{PORT_PREFIX}4096", b"f" * 64),
        ]
        for forward in forwards:
            await forward.start()
        try:
            # The stand-in the wrapper starts for a backend: the command runs in the backend's pod.
            spec = {"socket": str(wrapper_folder / "sidecar.sock"), "timeout": 10, "network": "apart", "fds": []}
            listing = "import os; print(sorted(os.listdir('/sys/class/net')))"
            command = [sys.executable, "-I", "-S", stand_in.__file__, json.dumps(spec), "--", sys.executable, "-I"]
            started = await asyncio.create_subprocess_exec(
                *command, "-c", listing, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            out, err = await asyncio.wait_for(started.communicate(), 60)
            page = await _get(wrapper_folder / "opencode.sock")
            forged = await _get(wrapper_folder / "forged.sock")
            direct = await asyncio.to_thread(_dial, pods.backend, 4096)
        finally:
            for forward in forwards:
                await forward.stop()
            served.terminate()
            served.wait(10)
    assert started.returncode == 0, err
    assert out.decode().strip() == str(sorted(["lo", f"k8b{pods.namespace.removeprefix('a2a-pod-')}"]))
    assert page.startswith(b"HTTP/1.0 200"), page
    assert forged == b""  # refused at the backend's gate: the forward closes the connection
    assert "channel gate: refused" in pods.backend_log and "a wrong token" in pods.backend_log
    assert direct == "refused"  # the backend's served port is on its loopback; the policy admits only the gate


async def _get(path: Path) -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(b"GET / HTTP/1.0\r\n\r\n")
    try:
        return await asyncio.wait_for(reader.read(), 15)
    finally:
        writer.close()


def _dial(host: str, port: int) -> str:
    import socket

    try:
        socket.create_connection((host, port), timeout=4).close()
    except OSError:
        return "refused"
    return "connected"


@asynccontextmanager
async def backend_pod(pod: PodNetwork, runtime: SidecarRuntime, folder: Path) -> AsyncIterator[None]:
    """The backend's pod as `deploy kubernetes --backend-pod` renders it, in the namespace: its own mounts, where
    `runtime.sockets` is the channel's folder (not the wrapper's) and `runtime.shown` is read-only; `a2a-wrap
    channel` and `a2a-wrap sidecar` started as its two containers would be."""
    assert runtime.token_file is not None and runtime.shown is not None
    channel_sockets = folder / "channel-sockets"
    channel_sockets.mkdir()
    runtime.sockets.mkdir(parents=True, exist_ok=True)
    runtime.shown.mkdir(parents=True, exist_ok=True)
    a2a_wrap = Path(sys.executable).with_name("a2a-wrap")
    channel = [
        a2a_wrap, "channel", "--token-file", runtime.token_file, "--listen", f"{pod.backend}:{BACKEND_GATE_PORT}",
        "--wrapper", f"{pod.wrapper}:{WRAPPER_GATE_PORT}", "--folders", runtime.folders, "--sockets", runtime.sockets,
    ]  # fmt: skip
    script = (
        f"mount --bind {channel_sockets} {runtime.sockets} && mount --bind {runtime.shown} {runtime.shown} && "
        f"mount -o remount,bind,ro {runtime.shown} && {{ {' '.join(map(str, channel))} & }} && "
        f"echo $! > {folder / 'channel.pid'} && exec {a2a_wrap} sidecar --folders {runtime.folders}"
    )
    log = (folder / "backend-pod.log").open("w")
    process = pod.run("unshare", "-m", "--propagation", "private", "sh", "-c", script, stdout=log, stderr=log)
    deadline = asyncio.get_running_loop().time() + 60
    while not ((channel_sockets / EGRESS_SOCKET).exists() and (runtime.folders / "sidecar.sock").exists()):
        assert process.poll() is None, (folder / "backend-pod.log").read_text()
        assert asyncio.get_running_loop().time() < deadline, "the backend's pod did not start in 60 s"
        await asyncio.sleep(0.05)
    try:
        yield
    finally:
        process.terminate()
        process.wait(10)
        os.kill(int((folder / "channel.pid").read_text()), signal.SIGTERM)
        log.close()


@pytest.mark.slow
async def test_an_agent_runs_opencode_in_a_pod_of_its_own_reached_only_through_its_channels(
    pods: PodNetwork, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A whole agent (runtime.network apart) whose OpenCode runs in the backend's pod: the wrapper starts it through
    the sidecar's channel, reaches its port through the backend's gate, OpenCode reaches the model and the hook
    through the wrapper's gate; a tool there finds neither the wrapper's port nor the gate without the token."""
    token_file = tmp_path / "channel-token"
    token_file.write_text(secrets.token_hex(32))
    enforce(backend_network_policy("coder", "agents"), pods)
    runtime = SidecarRuntime(
        sockets=tmp_path / "s", folders=tmp_path / "f", network="apart", gate=f"{pods.wrapper}:{WRAPPER_GATE_PORT}",
        backend_gate=f"{pods.backend}:{BACKEND_GATE_PORT}", token_file=token_file, shown=tmp_path / "shown",
    )  # fmt: skip
    opencode = next(backend for backend in BACKENDS if backend.name == "opencode")
    workspace = tmp_path / "state" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "dial.py").write_text(DIAL)
    targets = [(pods.wrapper, WRAPPER_GATE_PORT, "a2a-channel egress.sock guess"), ("127.0.0.1", WRAPPER_GATE_PORT, "")]
    targets.append((OUTSIDE, 443, ""))
    async with OfflineModel() as model, backend_pod(pods, runtime, tmp_path), httpx.AsyncClient(timeout=120) as http:
        harness = Harness(opencode, model, tmp_path, request.node)
        async with harness.serving(runtime=runtime, auto_approve=True) as served:
            targets.append((pods.wrapper, urlsplit(served.url).port or 0, ""))
            dials = "; ".join(
                f"python3 dial.py {host} {port} '{payload}' >> dialled.txt" for host, port, payload in targets
            )
            command = f"{dials}; ls /sys/class/net > nics.txt"
            events = await stream(http, served.jsonrpc, bash_params(command, description="escape"))
            assert final_state(events) == "TASK_STATE_COMPLETED", events[-1]
    dialled = (workspace / "dialled.txt").read_text().splitlines()
    assert dialled == [
        "answered: refused: a wrong token",
        "failed: ConnectionRefusedError",
        "failed: ConnectionRefusedError",
        "failed: ConnectionRefusedError",
    ], dialled
    audit = recent(tmp_path / "state" / "state.db", 50)
    # OpenCode's hook plugin blocks a tool whose hook gets no answer: the command ran, decided through the channel.
    assert [entry.decision for entry in audit if "dial.py" in entry.target] == ["allow"]
    (refused,) = [entry for entry in audit if entry.tool == "channel"]
    assert (refused.decision, refused.rule, refused.decided_by) == ("deny", "a wrong token", "sandbox")
    assert refused.target.startswith(f"{pods.backend}:") and refused.target.endswith(f" {EGRESS_SOCKET}")
    nics = (workspace / "nics.txt").read_text().split()
    assert nics == sorted(["lo", f"k8b{pods.namespace.removeprefix('a2a-pod-')}"]), "the tool ran in the backend's pod"


# A tool's direct connection, as one ignoring the proxy would make it: what it got back, or why it failed.
DIAL = """import socket, sys
try:
    connection = socket.create_connection((sys.argv[1], int(sys.argv[2])), 4)
    connection.sendall(sys.argv[3].encode() + b"\\n")
    print("answered: " + connection.recv(200).decode().strip())
except OSError as exc:
    print("failed: " + type(exc).__name__)
"""
