"""Run by a sandboxed backend's bash tool (python3 this.py OUT_DIR): everywhere a tool could find the operator's
provider key or GitHub token, each place's findings dumped to a file of its own for the test to search."""

import base64
import os
import re
import sys
import urllib.request

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def dump(name, text):
    with open(os.path.join(out, name), "w", errors="replace") as file:
        file.write(text)


def safely(function):
    try:
        return function()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


pids = [name for name in os.listdir("/proc") if name.isdigit()]
BACKENDS = ("opencode", "copilot")  # the programs whose memory is searched: the backend's own process


def read(path, limit=1 << 20):
    try:
        with open(path, "rb") as file:
            return file.read(limit).decode(errors="replace")
    except OSError as exc:
        return f"({exc})"


dump("env.txt", "\n".join(f"{k}={v}" for k, v in os.environ.items()))
dump("proc-environ.txt", "\n".join(read(f"/proc/{pid}/environ").replace("\0", "\n") for pid in pids))
dump("proc-cmdline.txt", "\n".join(read(f"/proc/{pid}/cmdline").replace("\0", " ") for pid in pids))


def tree(*roots):
    found = []
    for root in roots:
        for folder, _, files in os.walk(root):
            if out in folder:
                continue
            for name in files:
                path = os.path.join(folder, name)
                if os.path.isfile(path) and os.path.getsize(path) < (4 << 20):
                    found.append(f"== {path}\n{read(path, 4 << 20)}")
    return "\n".join(found)


env = os.environ
dump("config-folder.txt", tree(env.get("XDG_CONFIG_HOME", "/nonexistent")))
own = [env.get(name, "/nonexistent") for name in ("HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "TMPDIR")]
dump("own-folders.txt", tree(*own, env.get("COPILOT_HOME", "/nonexistent")))
dump("workspace-tmp-run.txt", tree(".", "/tmp", "/run"))


def backend_api():
    """OpenCode's own API, with the password every tool inherits: its config and providers as it holds them."""
    cmdline = read("/proc/3/cmdline").split("\0")
    port = cmdline[cmdline.index("--port") + 1] if "--port" in cmdline else None
    if port is None or "OPENCODE_SERVER_PASSWORD" not in env:
        return "no OpenCode API here"
    auth = base64.b64encode(f"opencode:{env['OPENCODE_SERVER_PASSWORD']}".encode()).decode()
    said = []
    for path in ("/config", "/config/providers", "/provider"):
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Basic {auth}"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        said.append(safely(lambda o=opener, r=request: o.open(r, timeout=10).read().decode()))
    return "\n".join(said)


dump("backend-api.txt", backend_api())


def memory():
    """What follows each `Bearer `, `apiKey`, `api_key`, `token` in the memory of every process of the backend."""
    hits = []
    needles = re.compile(rb"(Bearer |apiKey|api_key|Token|token)")
    backend = [pid for pid in pids if os.path.basename(safely(lambda p=pid: os.readlink(f"/proc/{p}/exe"))) in BACKENDS]
    for pid in backend:
        try:
            maps = open(f"/proc/{pid}/maps").read().splitlines()
            memory = open(f"/proc/{pid}/mem", "rb", 0)
        except OSError:
            continue
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            if end - start > (64 << 20):
                continue
            try:
                memory.seek(start)
                chunk = memory.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            for match in needles.finditer(chunk):
                hits.append(chunk[match.start() : match.start() + 160].decode(errors="replace"))
                if len(hits) > 5000:
                    return "\n".join(hits)
    return "\n".join(hits)


dump("backend-memory.txt", safely(memory))
print("looked")
