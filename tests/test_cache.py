"""The on-disk cache (triage.cache): what is read back equals what would be built, a damaged or
stale entry is rebuilt, and the folder does not grow without end."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from triage import cache
from triage.rules import builtin_rules_dir, load_rule, load_rules


def _comparable(rules: list) -> list[tuple]:  # type: ignore[type-arg]
    return [tuple(getattr(r, f.name) for f in dataclasses.fields(r)) for r in rules]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_cached_builtin_rules_equal_the_parsed_files(cache_dir: Path) -> None:
    first = load_rules()  # parses the YAML, fills the cache
    (entry,) = cache_dir.glob("rules-*.json")
    second = load_rules()  # from the cache
    parsed = [load_rule(path, builtin=True) for path in sorted(builtin_rules_dir().rglob("*.yaml"))]
    assert _comparable(second) == _comparable(first) == _comparable(parsed)
    assert entry.exists()


def test_a_damaged_rules_entry_is_rebuilt(cache_dir: Path) -> None:
    load_rules()
    (entry,) = cache_dir.glob("rules-*.json")
    parsed = _comparable([load_rule(p, builtin=True) for p in sorted(builtin_rules_dir().rglob("*.yaml"))])
    for damage in (b"", b"[1, 2", b'{"a": 1}', b"[]", b'[{"id": 5}]' ):
        entry.write_bytes(damage)
        assert _comparable(load_rules()) == parsed
        assert len(entry.read_bytes()) > 1000, "rewritten whole"


def test_the_cache_can_be_turned_off_and_keeps_a_few_entries(cache_dir: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(cache.KEEP + 5):
        cache.write(f"thing-{i:02d}.db", b"x")
    cache.write("other-1.db", b"y")
    kept = sorted(p.name for p in cache_dir.iterdir())
    assert len([n for n in kept if n.startswith("thing-")]) == cache.KEEP
    assert "other-1.db" in kept and not [n for n in kept if n.endswith(".tmp")]
    monkeypatch.setenv("TRIAGE_CACHE_DIR", "")
    assert cache.folder() is None and cache.read("other-1.db") is None
    cache.write("new-1.db", b"z")
    assert not (cache_dir / "new-1.db").exists()


def test_an_unwritable_cache_folder_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(blocked / "cache"))
    assert len(load_rules()) > 100
    cache.write("x-1.db", b"x")  # nothing raised
