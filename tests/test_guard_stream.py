"""Streaming redaction: whatever the chunks, the output is `redact()` of the whole; prose is never held back."""

import itertools
import random
import time
from collections.abc import Iterable

import pytest

from a2a_wrapper.guard import StreamRedactor, redact
from a2a_wrapper.guard.stream import MAX_HOLD
from tests.helpers.secrets import (
    ADVERSARIAL,
    AWS_ID,
    GITHUB,
    GUTTERS,
    JWT,
    KEPT,
    OPENSSH,
    PEM,
    REDACTED,
    numbered,
)

DOCUMENT = f"""Here is the setup. Put this in `.env`:

```
DB_PASSWORD=supersecret
GITHUB_TOKEN={GITHUB}
AWS_ACCESS_KEY_ID={AWS_ID}
```

Then call the API: `curl -H "Authorization: Bearer {JWT}" https://admin:s3cret@api.example.com/v1?api_key=k9&x=1`.
The config is {{"password": "correct horse", "max_tokens": 100000, "token": "${{TOKEN}}"}}; the key:
{PEM}
Done? Yes: it works, see https://example.com/path?q=1 - bye!"""

LISTINGS = [f"{numbered(gutter, OPENSSH[:cut])}\n\n(End)" for gutter in GUTTERS.values() for cut in (3, 6)]
CORPUS = [text for text, _ in REDACTED] + KEPT + [DOCUMENT] + LISTINGS


def streamed(chunks: Iterable[str]) -> tuple[str, StreamRedactor]:
    """Feeds the chunks; checks the hold-back bound on the way."""
    redactor, out = StreamRedactor(), []
    for chunk in chunks:
        out.append(redactor.feed(chunk))
        assert len(redactor.pending) <= MAX_HOLD
    out.append(redactor.flush())
    return "".join(out), redactor


def splits(text: str, cuts: Iterable[int]) -> list[str]:
    points = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(points)]


@pytest.mark.parametrize("text", CORPUS, ids=range(len(CORPUS)))
def test_every_split_gives_the_output_of_redacting_the_whole(text: str) -> None:
    expected = redact(text)[0]
    if len(text) <= 150:
        cut_sets: Iterable[tuple[int, ...]] = ((i, j) for i in range(len(text) + 1) for j in range(i, len(text) + 1))
    else:  # every single cut, and random sets of up to 30 cuts
        rng = random.Random(len(text))
        cut_sets = [(i,) for i in range(len(text) + 1)]
        cut_sets += [tuple(rng.sample(range(len(text)), rng.randint(2, 30))) for _ in range(300)]
    for cuts in cut_sets:
        assert streamed(splits(text, cuts))[0] == expected, cuts


@pytest.mark.parametrize("text", CORPUS, ids=range(len(CORPUS)))
def test_one_character_at_a_time_gives_the_same_output_and_findings(text: str) -> None:
    output, redactor = streamed(text)
    assert (output, redactor.findings) == redact(text)


def test_prose_flows_without_delay() -> None:
    redactor = StreamRedactor()
    for word in "The quick brown fox jumps over the lazy dog. Ready? Yes: it works, now & then! ".split(" "):
        assert redactor.feed(word + " ") == word + " "
    assert redactor.feed("the lazy fo") == "the lazy fo"  # no credential starts with `fo`


def test_only_the_text_that_may_start_a_secret_is_held_back() -> None:
    redactor = StreamRedactor()
    assert redactor.feed("key AKIA") == "key "
    assert redactor.pending == "AKIA"
    assert redactor.feed("IOSFODNN7EXAMPLE") == ""  # a 17th character would make it something else
    assert redactor.feed(" ok") == "[REDACTED:aws-access-key] ok"
    assert redactor.feed(" my passw") == " my "
    assert redactor.feed("ord is lost") == "password is los"  # a `t` may start `token=`
    assert redactor.pending == "t"


def test_a_long_key_block_goes_out_as_one_marker_and_is_never_held_whole() -> None:
    body = "".join(f"{random.Random(i).randbytes(48).hex()[:64]}\n" for i in range(60))
    text = f"key:\n-----BEGIN PRIVATE KEY-----\n{body}-----END PRIVATE KEY-----\nthanks"
    redactor = StreamRedactor()
    out = [redactor.feed(text[i : i + 7]) for i in range(0, len(text), 7)]
    out.append(redactor.flush())
    assert "".join(out) == "key:\n[REDACTED:private-key]\nthanks"
    assert max(len(part) for part in out) < 40  # the marker left early; nothing piled up behind it
    assert [(f.kind, text[f.start : f.end].splitlines()[-1]) for f in redactor.findings] == [
        ("private-key", "-----END PRIVATE KEY-----")
    ]


def test_a_key_cut_off_by_the_end_of_the_stream_is_redacted() -> None:
    redactor = StreamRedactor()
    out = redactor.feed("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz") + redactor.feed("aC1rZXkt")
    assert out + redactor.flush() == "[REDACTED:private-key]"


def test_findings_carry_offsets_in_the_whole_stream() -> None:
    text = f"first {GITHUB}\nthen {AWS_ID}"
    _, redactor = streamed(splits(text, [3, 20, 50]))
    assert [text[f.start : f.end] for f in redactor.findings] == [GITHUB, AWS_ID]


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_a_megabyte_of_adversarial_text_streams_in_linear_time(text: str) -> None:
    started = time.perf_counter()
    streamed(text[i : i + 1024] for i in range(0, len(text), 1024))
    assert time.perf_counter() - started < 2.0


FRAGMENTS = [*CORPUS[:-1], "AKIA", "ghp_", "eyJ", ".eyJ", "-----BEGIN ", "-----END RSA PRIVATE KEY-----", "://",
             "?", "&", "=", ":", '"', "'", "\\", "\n", " ", "token", "password", "PASSWORD=", "Authorization: ",
             "Bearer ", "sk-", "@", "${", "[REDACTED:", "x" * 20, "1" * 10, "A" * 16, "-"]  # fmt: skip


def test_random_compositions_stream_like_the_whole() -> None:
    rng = random.Random(7)
    for _ in range(1500):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 8)))
        if rng.random() < 0.3:  # shuffle in the characters that open and close secrets
            text = "".join(rng.choice(text + "AKIa=:/\"'- \n.") for _ in text)
        cuts = rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 12)))
        output, redactor = streamed(splits(text, cuts))
        assert (output, redactor.findings) == redact(text), (text, cuts)
