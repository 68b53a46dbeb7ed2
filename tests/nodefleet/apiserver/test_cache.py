"""Parsed CRD files are kept as JSON by the hash of their bytes, so start-up skips the YAML parse; the cache
can only ever give what the file says."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodefleet.apiserver import store as crdstore
from nodefleet.apiserver.store import CRD_DIR


def _a_crd() -> Path:
    return next(p for p in sorted(CRD_DIR.glob("*.yaml")) if p.name != crdstore.SOURCES_FILE)


def test_a_crd_is_parsed_once_then_read_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(crdstore.CACHE_ENV, str(tmp_path))
    path = _a_crd()
    first = crdstore._read_crd(path)
    kept = list((tmp_path / "crds").glob("*.json"))
    assert len(kept) == 1
    monkeypatch.setattr(crdstore, "_parse_crd", lambda *_: pytest.fail("parsed again"))
    assert crdstore._read_crd(path) == first


def test_a_changed_file_is_parsed_again_and_a_broken_cache_entry_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(crdstore.CACHE_ENV, str(tmp_path / "cache"))
    path = tmp_path / "crd.yaml"
    path.write_text(_a_crd().read_text(encoding="utf-8"), encoding="utf-8")
    doc = crdstore._read_crd(path)
    for kept in (tmp_path / "cache" / "crds").glob("*.json"):
        kept.write_text("{not json", encoding="utf-8")
    assert crdstore._read_crd(path) == doc
    path.write_text(path.read_text(encoding="utf-8").replace(doc["metadata"]["name"], "renamed.example.com"))
    assert crdstore._read_crd(path)["metadata"]["name"] == "renamed.example.com"


def test_an_empty_cache_setting_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(crdstore.CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    crdstore._read_crd(_a_crd())
    assert not any(tmp_path.rglob("*.json"))
