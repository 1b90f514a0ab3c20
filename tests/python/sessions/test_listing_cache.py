"""The listing's per-folder summary cache never shows stale or lost sessions."""

from __future__ import annotations

from pathlib import Path

from tandem.store import layout
from tandem.store.journal import Journal
from tandem.store.listing import CACHE_NAME, list_sessions


def test_cache_follows_appends_header_rewrites_deletions_and_damage(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    a = Journal.create(home, str(project), "first")
    b = Journal.create(home, str(project), "second")
    assert {s.title for s in list_sessions(home)} == {"first", "second"}
    cache = layout.slug_dir(home, str(project)) / CACHE_NAME
    assert cache.exists()

    a.append({"type": "user", "turn": 1, "text": "hello"})  # size changes
    a.update_header(title="renamed")  # new inode
    by_id = {s.id: s for s in list_sessions(home)}
    assert by_id[a.id].title == "renamed" and by_id[a.id].last_seq == 1

    b.close()
    Path(b.path).unlink()
    assert [s.id for s in list_sessions(home)] == [a.id]

    cache.write_text('{"torn": [1, 2')  # a torn cache is rebuilt, not trusted
    assert [s.title for s in list_sessions(home)] == ["renamed"]
    a.close()


def test_cached_and_uncached_listings_agree(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for i in range(5):
        project = tmp_path / f"p{i}"
        project.mkdir()
        j = Journal.create(home, str(project), f"t{i}")
        j.append({"type": "user", "turn": 1, "text": "x"})
        j.close()
    first = [s.model_dump() for s in list_sessions(home)]
    second = [s.model_dump() for s in list_sessions(home)]  # from the caches
    assert first == second
    for folder in layout.slug_dirs(home):
        (folder / CACHE_NAME).unlink()
    assert [s.model_dump() for s in list_sessions(home)] == first
