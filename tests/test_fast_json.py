"""JSON on the hot paths (fast_json.py, by orjson) reads and prints what the standard library does, compact, and
falls back to it for what orjson refuses; a2a-sdk's stream events are printed by it once the app is built."""

import json
import math
from typing import Any

import a2a
import pytest
from a2a.utils import json_utils

from a2a_wrapper import fast_json
from a2a_wrapper.frontend.compat.sdk_json import use_fast_json
from tests.helpers.package_source import modules_naming

VALUES: list[Any] = [
    {"jsonrpc": "2.0", "id": 7, "result": {"statusUpdate": {"taskId": "t", "final": True, "n": 2.5, "none": None}}},
    ["naïve — 日本語 🙂", 0, -1, 2**63 - 1, 1e-7, True, False, {}],
    'a "quoted" \\ line\nbreak\u2028',
]
REFUSED_BY_ORJSON: list[Any] = [2**64, -(2**63) - 1, {"a": "\ud800"}, {1: "int key"}]


@pytest.mark.parametrize("value", VALUES)
def test_it_prints_the_same_json_compactly_with_unicode_as_it_is(value: Any) -> None:
    printed = fast_json.dumps(value)
    assert json.loads(printed) == value
    standard = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert printed == standard.replace("1e-07", "1e-7")  # the one difference: how a float is spelled


@pytest.mark.parametrize("value", REFUSED_BY_ORJSON)
def test_what_orjson_refuses_the_standard_library_prints(value: Any) -> None:
    assert fast_json.dumps(value) == json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("value", VALUES)
def test_it_reads_what_the_standard_library_reads(value: Any) -> None:
    text = json.dumps(value)
    assert fast_json.loads(text) == json.loads(text) == value
    assert fast_json.loads(text.encode()) == value


def test_nan_and_infinity_are_read_as_the_standard_library_reads_them() -> None:
    read = fast_json.loads('{"a": NaN, "b": Infinity}')
    assert math.isnan(read["a"]) and read["b"] == math.inf


@pytest.mark.parametrize("text", ["[1, 2", "", "{'single': 1}", '{"a": 1} trailing'])
def test_text_that_is_not_json_raises_the_standard_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        fast_json.loads(text)


def test_the_sdk_prints_its_stream_events_with_it_once_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_utils, "dumps", json_utils.dumps)  # restored after the test
    use_fast_json()
    assert json_utils.dumps({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    # every module that prints with it calls it through the module, where the install reaches it
    assert modules_naming(a2a, "json_utils.dumps(") == {
        "a2a.server.routes.jsonrpc_dispatcher",
        "a2a.server.routes.rest_dispatcher",
        "a2a.compat.v0_3.rest_adapter",
    }
    assert modules_naming(a2a, "import dumps") == set()
