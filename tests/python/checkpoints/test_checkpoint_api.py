"""The read-only checkpoint methods, in process and over the real EPC wire."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from cp_helpers import write
from pydantic import ValidationError

from tandem.adapters.checkpoints import METHODS
from tandem.app import App
from tandem.checkpoints import Checkpointer
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import DiffParams, PlanParams

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from server.epc_peer import Peer, start_backend  # noqa: E402

TOKEN = "checkpoint-token"


def _call(app: App, name: str, params: dict[str, Any]) -> Any:
    spec = next(m for m in METHODS if m.name == name)

    async def run() -> Any:
        return await spec.handler(app, spec.params.model_validate(params))

    return anyio.run(run)


def test_handlers_in_process(home: Path, root: Path) -> None:
    write(root, "a.txt", "a\n")
    app = App(home=home)
    start = Checkpointer(home, root).snapshot("pre")
    write(root, "a.txt", "b\n")
    listed = _call(app, "checkpoints/list", {"root": str(root)}).root
    assert [c.id for c in listed] == [start.id]
    patch = _call(app, "checkpoints/diff", {"root": str(root), "start": start.id})
    assert patch.files[0].path == "a.txt" and patch.completeness == "captured"
    plan = _call(app, "checkpoints/plan-restore", {"root": str(root), "checkpoint": start.id})
    assert plan.to_restore == ["a.txt"]
    assert (root / "a.txt").read_text() == "b\n"  # planning is read-only


def test_bad_params_are_refused(home: Path, root: Path, tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        DiffParams.model_validate({"root": str(root), "start": "short"})
    with pytest.raises(ValidationError):
        PlanParams.model_validate({"root": str(root), "checkpoint": "a" * 40, "extra": 1})
    app = App(home=home)
    with pytest.raises(TandemError) as info:
        _call(app, "checkpoints/list", {"root": "relative/path"})
    assert info.value.code == "invalid"
    with pytest.raises(TandemError) as info:
        _call(app, "checkpoints/diff", {"root": str(tmp_path / "nope"), "start": "a" * 40})
    assert info.value.code == "not-found"


@pytest.fixture
def peer(home: Path) -> Iterator[Peer]:
    proc = start_backend(home, TOKEN)
    p = Peer(proc.port)  # type: ignore[attr-defined]
    p.call("hello", {"token": TOKEN})
    assert p.recv()[0] == "return"
    yield p
    p.close()
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_over_the_wire(peer: Peer, home: Path, root: Path) -> None:
    write(root, "a.txt", "a\n")
    start = Checkpointer(home, root).snapshot("pre")
    write(root, "b.bin", b"\0\1\2")
    uid = peer.call("checkpoints/diff", {"root": str(root), "start": start.id})
    reply = peer.recv()
    assert reply[:2] == ["return", uid], reply
    patch = reply[2]  # the peer reads a plist back as a dict with snake_case keys
    assert patch["completeness"] == "captured"
    assert patch["files"][0]["path"] == "b.bin" and patch["files"][0]["binary"] is True
    assert "Binary files /dev/null and b/b.bin differ" in patch["diff"]
    uid = peer.call("checkpoints/diff", {"root": str(root), "start": "0" * 40})
    reply = peer.recv()
    assert reply[0] == "return-error" and "not-found" in str(reply), reply


def test_service_keeps_one_engine_per_root(home: Path, root: Path, tmp_path: Path) -> None:

    app = App(home=home)
    service = app.checkpoints
    assert app.checkpoints is service
    first = service.for_root(root)
    assert service.for_root(str(root)) is first
    assert service.for_root(root / ".") is first
    link = tmp_path / "link"
    link.symlink_to(root)
    assert service.for_root(link) is first  # resolved: one store per real root
    with pytest.raises(TandemError):
        service.for_root("relative")
