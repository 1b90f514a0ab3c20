"""The session gate: one holder per session, a ``busy`` that names it, and the wiring."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.remote.by_session import CheckpointsBySession
from tandem.sessions.gate import SessionGate
from tandem.turns.service import GitCheckpoints


def test_a_held_session_refuses_every_other_holder_with_the_holders_name() -> None:
    async def main() -> None:
        gate = SessionGate()
        async with gate.hold("s1", "rewind"):
            assert gate.holds("s1", "rewind") and gate.holder("s2") is None
            for wanted, words in (("turn", "being rewound; send again"),
                                  ("rewind", "already being rewound"),
                                  ("compaction", "being rewound")):
                with pytest.raises(TandemError) as err:
                    gate.acquire("s1", wanted)  # type: ignore[arg-type]
                assert err.value.code == "busy" and words in err.value.message
            gate.acquire("s2", "compaction")  # another session is free
        assert gate.holder("s1") is None  # released when the block ends
        with pytest.raises(TandemError) as err:
            gate.check_free("s2", "rewind")
        assert "being compacted; rewind when it is done" in err.value.message

    asyncio.run(main())


def test_the_gate_is_released_when_the_block_raises() -> None:
    async def main() -> None:
        gate = SessionGate()
        with pytest.raises(RuntimeError):
            async with gate.hold("s", "compaction"):
                raise RuntimeError("boom")
        assert gate.holder("s") is None

    asyncio.run(main())


def test_the_app_wires_one_gate_and_one_checkpoint_service(tmp_path: Path) -> None:
    app = App(home=tmp_path / "home")
    hooks = app.turns.engine.checkpoints
    # Per session: the local store, or (a remote target) the mirror, through the same service.
    assert isinstance(hooks, CheckpointsBySession)
    assert isinstance(hooks.local, GitCheckpoints) and hooks.local.service is app.checkpoints
    assert hooks.remote is app.remote_checkpoints is app.rewinds.remote
    remote_local = app.remote_checkpoints.local
    assert isinstance(remote_local, GitCheckpoints) and remote_local.service is app.checkpoints
    assert app.turns.engine.gate is app.gate
    assert app.compactions.gate is app.gate and app.rewinds.gate is app.gate
    assert app.workspaces.sessions is app.sessions is app.turns.sessions
