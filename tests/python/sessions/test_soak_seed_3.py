"""Soak seed 3: a full disk while the breadcrumb is written must not refuse the session.

The soak (tests/soak) armed ``atomic.fsync=enospc`` and the next
``sessions/resume`` answered ``internal``: the breadcrumb for ``continue``
(a convenience) was written with the same ``atomic_write`` and its OSError
escaped. This runs the real backend with the same fault armed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from server.epc_peer import Peer, start_backend  # noqa: E402
from tandem.protocol.sexp import Symbol  # noqa: E402


def _call(peer: Peer, method: str, params: dict[str, object]) -> list[object]:
    uid = peer.call(method, params)
    while True:
        msg = peer.recv()
        if msg[0] == "call":  # an event batch: acknowledge it
            peer.send([Symbol("return"), msg[1], None])
        elif msg[1] == uid:
            return list(msg)


def test_soak_seed_3_a_failed_breadcrumb_write_does_not_refuse_the_resume(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    first = start_backend(home, "t")
    peer = Peer(first.port)  # type: ignore[attr-defined]
    _call(peer, "hello", {"token": "t"})
    sid = _call(peer, "sessions/new", {"cwd": str(project)})[2]["id"]  # type: ignore[index]
    peer.close()
    first.terminate()
    first.wait(10)
    crumb = home / "breadcrumbs" / "emacs.json"
    before = crumb.read_bytes()
    proc = start_backend(home, "t", env={"TANDEM_FAULTS": "atomic.fsync=enospc@1"})
    try:
        peer = Peer(proc.port)  # type: ignore[attr-defined]
        _call(peer, "hello", {"token": "t"})
        reply = _call(peer, "sessions/resume", {"query": sid, "cwd": str(project)})
        assert reply[0] == "return", reply
        assert reply[2]["id"] == sid  # type: ignore[index]
        assert crumb.read_bytes() == before  # the old breadcrumb stays, whole
        assert not list(crumb.parent.glob(".*tmp-*"))
        peer.close()
    finally:
        proc.terminate()
        proc.wait(10)
    log = (home / "logs" / "backend.log").read_text()
    assert "cannot record the last session" in log
