"""The benchmark scripts still load against the package as it is (they are run by hand, not by the suite)."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize(
    "script", ["overhead", "backends", "sandbox", "state", "sdk_floor", "model_relay", "event_journal"]
)
def test_a_bench_script_imports_and_answers_help(
    script: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))  # the scripts import each other, as they do when run from bench/
    spec = importlib.util.spec_from_file_location(f"bench_{script}", BENCH / f"{script}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as ended:
        module.main(["--help"])
    assert ended.value.code == 0 and "usage:" in capsys.readouterr().out
