"""What the guard's redaction costs on the text it sees on every turn: an answer streamed as deltas, and whole.

The text is a realistic answer (prose, code, a diff, a shell session), about 60 KB, fed to `StreamRedactor` in
deltas of 1 to 40 characters as a model streams them, and given to `redact()` whole. With `--known N`, N
secret values of the process are in force too (each in its raw and encoded forms), as an agent runs with its
provider key, GitHub token and callers' keys. Prints the best of `--repeat` runs, in MB/s and µs per delta.

    .venv/bin/python bench/guard.py [--repeat N] [--known N] [--json out.json]
"""

import argparse
import json
import random
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from a2a_wrapper.guard import StreamRedactor, redact

ANSWER = """I looked at the failing test. The problem is in `parse_config()`: it reads `max_tokens` as a string.

```python
def parse_config(path: Path) -> Config:
    data = yaml.safe_load(path.read_text())
    token = os.environ.get("API_TOKEN")  # read at start, never logged
    return Config(max_tokens=int(data["max_tokens"]), endpoint=data["endpoint"], token=token)
```

Running the suite:

$ pytest -q tests/test_config.py
..........F.....                                                     [100%]
FAILED tests/test_config.py::test_max_tokens - AssertionError: assert '100' == 100
$ git diff --stat
 src/config.py | 4 ++--
 1 file changed, 2 insertions(+), 2 deletions(-)
$ curl -s https://api.example.com/v1/models?limit=5 | jq '.data[].id'
"gpt-4o"
"claude-sonnet"

--- a/src/config.py
+++ b/src/config.py
@@ -10,7 +10,7 @@ def parse_config(path: Path) -> Config:
-    return Config(max_tokens=data["max_tokens"], endpoint=data["endpoint"])
+    return Config(max_tokens=int(data["max_tokens"]), endpoint=data["endpoint"])

The commit 3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f fixed a similar bug; request 123e4567-e89b-12d3-a456 ran.
"""


def deltas(text: str, seed: int = 1) -> list[str]:
    rng, out, pos = random.Random(seed), [], 0
    while pos < len(text):
        step = rng.randint(1, 40)
        out.append(text[pos : pos + step])
        pos += step
    return out


def best(repeat: int, run: "callable") -> float:  # type: ignore[valid-type]
    times = []
    for _ in range(repeat):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--known", type=int, default=0, help="secret values of the process in force (0: none)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.known:
        from a2a_wrapper.guard.known import remember_secrets

        remember_secrets("ghp_" + secrets.token_urlsafe(27) for _ in range(args.known))
    text = ANSWER * 40
    chunks = deltas(text)

    def streamed() -> None:
        redactor = StreamRedactor()
        for chunk in chunks:
            redactor.feed(chunk)
        redactor.flush()

    stream_s = best(args.repeat, streamed)
    whole_s = best(args.repeat, lambda: redact(text))
    result = {
        "text_bytes": len(text),
        "deltas": len(chunks),
        "known_secrets": args.known,
        "stream_mb_s": round(len(text) / stream_s / 1e6, 2),
        "stream_us_per_delta": round(stream_s / len(chunks) * 1e6, 2),
        "whole_mb_s": round(len(text) / whole_s / 1e6, 2),
    }
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
