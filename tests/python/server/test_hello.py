"""``hello`` says which backend answers: its version, protocol and interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tandem import __version__
from tandem.protocol.core import PROTOCOL_VERSION

from .conftest import TOKEN
from .epc_peer import Peer


def test_hello_reports_versions_and_the_interpreter(backend: subprocess.Popen[str]) -> None:
    peer = Peer(backend.port)  # type: ignore[attr-defined]
    peer.call("hello", {"token": TOKEN})
    kind, _uid, reply = peer.recv()
    peer.close()
    assert kind == "return"
    assert reply["version"] == __version__
    assert reply["protocol"] == PROTOCOL_VERSION
    # The backend runs on the interpreter that started it (this venv's).
    assert Path(reply["executable"]).resolve() == Path(sys.executable).resolve()
    assert reply["prefix"] == sys.prefix
    # The setup's list of API families (`tandem.providers.families`).
    assert [(f["name"], f["key_env"]) for f in reply["families"]] == [
        ("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
