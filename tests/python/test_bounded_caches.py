"""Every cache the backend keeps stays bounded, each tested here.

Each test fills a real cache through its real entry point with more distinct
keys than its limit and checks the size, and that the newest entry is still
served from the cache.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem import lru
from tandem.checkpoints.service import CheckpointService
from tandem.config import layers
from tandem.directives import log as wlog
from tandem.protocol import sexp
from tandem.store.entry_cache import EntryCache


def test_lru_drops_the_least_recently_used() -> None:
    cache: lru.LRU[str, int] = lru.LRU(2)
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1  # a is now the newest
    cache["c"] = 3
    assert "b" not in cache and list(cache) == ["a", "c"] and len(cache) == 2
    assert cache.setdefault("a", 9) == 1 and cache.pop("a") == 1 and cache.get("a", 7) == 7
    with pytest.raises(ValueError):
        lru.LRU(0)


def test_settings_file_cache_is_bounded(tmp_path: Path) -> None:
    for i in range(layers.CACHE_LIMIT + 20):
        path = tmp_path / f"s{i}.json"
        path.write_text('{"auto_compact": true}')
        last = layers.read_layer(path)
    assert len(layers._cache) <= layers.CACHE_LIMIT
    assert layers.read_layer(path) is last


def test_workspace_log_cache_is_bounded(tmp_path: Path) -> None:
    for i in range(wlog.CACHE_LIMIT + 10):
        log = wlog.WorkspaceLog(tmp_path, f"ws{i}")
        log.append("note", {"n": i})
        assert len(log.read()) == 1
    assert len(wlog._cache) <= wlog.CACHE_LIMIT
    assert log.path in wlog._cache


def _journal(path: Path, n: int) -> Path:
    path.write_text('{"type":"header"}\n' + "".join(f'{{"type":"x","n":{k}}}\n'
                                                    for k in range(n)))
    return path


def test_entry_cache_is_bounded(tmp_path: Path) -> None:
    cache = EntryCache(limit=4)
    for i in range(10):
        path = _journal(tmp_path / f"e{i}.jsonl", 2)
        assert len(cache.entries(path)) == 2
    assert len(cache._files) == 4 and str(path) in cache._files


def test_entry_cache_is_bounded_in_bytes(tmp_path: Path) -> None:
    big = _journal(tmp_path / "big.jsonl", 2000)
    cache = EntryCache(max_bytes=big.stat().st_size)
    small = _journal(tmp_path / "small.jsonl", 2)
    cache.entries(small)
    cache.entries(big)  # over the budget with both: the older one goes
    assert list(cache._files) == [str(big)]
    huge = EntryCache(max_bytes=10)
    assert len(huge.entries(big)) == 2000 and list(huge._files) == [str(big)]  # kept: just read


def test_sexp_symbol_and_key_tables_are_bounded() -> None:
    for i in range(5000):
        sexp.loads(f"(sym-{i} :key-{i} 1)")
        sexp.dumps({f"field_{i}": 1})
    assert len(sexp._SYMBOLS) <= 4096 and len(sexp._KEYS) <= 4096
    assert sexp.loads("(a-new-symbol)") == ["a-new-symbol"]  # still reads beyond the table


def test_checkpointer_registry_is_bounded(tmp_path: Path) -> None:
    service = CheckpointService(tmp_path / "home")
    limit = service._by_root.limit
    for i in range(limit + 3):
        root = tmp_path / f"root{i}"
        root.mkdir()
        last = service.for_root(root)
    assert len(service._by_root) == limit and service.for_root(root) is last


def test_folded_directive_state_cache_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tandem.app import App
    from tandem.directives import service as wservice

    monkeypatch.setattr(wservice, "FOLDED_LIMIT", 4)
    service = App(home=tmp_path / "home").workspaces
    for i in range(7):
        root = tmp_path / f"p{i}"
        root.mkdir()
        ws = service.open(str(root))
        assert service.states(ws) == {}
    assert len(service._folded) == 4 and ws.id in service._folded
