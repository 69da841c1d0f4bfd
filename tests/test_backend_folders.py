"""The folders the wrapper makes for a backend (backends/kit/isolation.py), where the backend can write their
parents (a sidecar's folders are one user's volume): a link planted above them never takes the wrapper's writes
or removals elsewhere. Real folders and links; the effect looked at is the link's target, untouched."""

from pathlib import Path

import pytest

from a2a_wrapper.backends.kit.isolation import isolated_env, produce_folder, shown_over
from a2a_wrapper.errors import BackendUnavailable


def _home(root: Path) -> Path:
    return root / "tenants" / "0123abcd" / "opencode"


@pytest.mark.parametrize("planted", ["opencode", "0123abcd", "tenants"])
def test_a_link_in_place_of_a_folder_above_the_backends_is_refused(tmp_path: Path, planted: str) -> None:
    home, elsewhere = _home(tmp_path / "folders"), tmp_path / "wrapper-only"
    elsewhere.mkdir()
    link = next(part for part in [home, *home.parents] if part.name == planted)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere)
    with pytest.raises(BackendUnavailable, match=f"{link} is a link, where the wrapper makes the backend's folders"):
        isolated_env(home, {})
    assert list(elsewhere.iterdir()) == [], "nothing made through the link"


def test_a_link_between_the_backends_folder_and_a_code_place_is_refused(tmp_path: Path) -> None:
    home, elsewhere = _home(tmp_path / "folders"), tmp_path / "wrapper-only"
    (elsewhere / "bin").mkdir(parents=True)
    (elsewhere / "bin" / "keep").write_text("the wrapper's")
    isolated_env(home, {})
    (home / "cache" / "opencode").symlink_to(elsewhere)  # the run left a link where the place's parent was
    produce_folder(home / "config", {"empty-bin": None})
    with pytest.raises(BackendUnavailable, match="cache/opencode is a link"):
        shown_over(home / "config", {"empty-bin": home / "cache" / "opencode" / "bin"}, home)
    assert (elsewhere / "bin" / "keep").read_text() == "the wrapper's", "nothing removed through the link"


def test_real_folders_pass_and_a_place_left_by_a_run_is_removed(tmp_path: Path) -> None:
    home = _home(tmp_path / "folders")
    isolated_env(home, {})
    planted = home / "home" / ".opencode" / "plugin"
    planted.mkdir(parents=True)
    (planted / "x.js").write_text("planted")
    produce_folder(home / "config", {"dot-opencode": None})
    given = shown_over(home / "config", {"dot-opencode": home / "home" / ".opencode"}, home)
    assert given == [(home / "config" / "dot-opencode", home / "home" / ".opencode")]
    assert not (home / "home" / ".opencode").exists(), "what the run left there is gone before the start"
