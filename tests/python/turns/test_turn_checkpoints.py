"""A turn's checkpoints carry its session and turn; the store is maintained after it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tandem.checkpoints.maintenance import Retention
from tandem.checkpoints.service import CheckpointService
from tandem.config.model import validate
from tandem.protocol.checkpoints import PatchSummary
from tandem.providers.base import TurnResult
from tandem.turns.service import GitCheckpoints, retention_from


def test_turn_checkpoints_are_owned_and_maintained(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    seen: list[Path] = []

    def retention(r: Path) -> Retention:
        seen.append(r)
        return Retention()

    cps = GitCheckpoints(CheckpointService(home), retention)

    async def turn() -> tuple[str | None, PatchSummary | None]:
        start = await cps.before(root, "sess1", 4)
        (root / "a.txt").write_text("two\n")
        summary = (await cps.after(root, start, TurnResult(outcome="succeeded"))).patch
        await asyncio.gather(*cps._background)  # the maintenance it scheduled
        return start, summary

    start, summary = asyncio.run(turn())
    cp = cps.service.for_root(root)
    assert start is not None and summary is not None
    end = cp.get(str(summary.to_id))
    assert (cp.get(start).owner, cp.get(start).turn) == ("sess1", 4)
    assert (end.owner, end.turn) == ("sess1", 4)
    assert seen == [root] and cp.layout.maintained.exists()


def test_retention_from_settings() -> None:
    assert retention_from(validate({}, "test")) == Retention()
    settings = validate({"checkpoints": {"keep_turns": 20, "keep_days": 30}}, "test")
    assert retention_from(settings) == Retention(keep_turns=20, keep_days=30)


def test_untrusted_project_cannot_lower_retention(tmp_path: Path) -> None:
    """Retention deletes history: an untrusted project's ``checkpoints`` is ignored."""
    from tandem.config.layers import resolve

    root = tmp_path / "proj"
    (root / ".tandem").mkdir(parents=True)
    (root / ".tandem" / "settings.json").write_text('{"checkpoints": {"keep_turns": 1}}')
    user = tmp_path / "user.json"
    user.write_text("{}")
    resolved = resolve(root, tmp_path / "home", user_path=user)
    assert resolved.settings.checkpoints is None
    assert "checkpoints" in resolved.ignored
