"""The session manager tells its `on_relocated` collaborator of each move."""

from __future__ import annotations

from pathlib import Path

from tandem.protocol.base import TandemError
from tandem.sessions.manager import SessionManager
from tandem.store.journal import Journal


def _moved(tmp_path: Path) -> tuple[Path, Path, str]:
    home, old = tmp_path / "home", tmp_path / "old"
    old.mkdir()
    journal = Journal.create(home, str(old))
    sid = journal.id
    journal.close()
    new = tmp_path / "new"
    old.rename(new)
    return home, new, sid


def test_relocate_calls_on_relocated_with_both_roots(tmp_path: Path) -> None:
    home, new, sid = _moved(tmp_path)
    seen: list[tuple[str, Path, Path]] = []
    manager = SessionManager(home, on_relocated=lambda *a: seen.append(a))
    manager.relocate(sid, str(new))
    assert seen == [(sid, tmp_path / "old", new)]


def test_a_failed_carry_never_undoes_the_move(tmp_path: Path) -> None:
    home, new, sid = _moved(tmp_path)

    def fail(*_: object) -> None:
        raise TandemError("invalid", "hostile store")

    path = SessionManager(home, on_relocated=fail).relocate(sid, str(new))
    assert path.is_file()
