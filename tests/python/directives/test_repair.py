"""Crash repair with real processes killed at the worst moments."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.script import Reply, ToolCallSpec
from ws_helpers import get, make_app

pytestmark = pytest.mark.anyio

RUNNER = Path(__file__).with_name("crash_runner.py")


def _entries(home: Path) -> list[dict[str, Any]]:
    journal = next((home / "sessions").rglob("*.jsonl"))
    return [json.loads(x) for x in journal.read_text().splitlines()[1:]]


def _edit_model(body: dict[str, Any]) -> Reply:
    if body["messages"][-1].get("role") == "tool":
        return Reply(text="Done: loud now.")
    return Reply(text="Writing.", tool_calls=[ToolCallSpec(
        name="write_file", input={"path": "a.txt", "content": "HELLO WORLD\n"})])


async def test_crash_between_boundary_close_and_attempt_record(project: Path, tmp_path: Path,
                                                              model: Any) -> None:
    fake = model(_edit_model)
    home = tmp_path / "home"
    proc = subprocess.run([sys.executable, str(RUNNER), str(home), str(project),
                           fake.base_url + "/v1", "record"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 9, proc.stderr
    assert "ACCEPTED" in proc.stdout and "NOT KILLED" not in proc.stdout
    kinds = [e["type"] for e in _entries(home)]
    assert kinds[-2:] == ["directive_close", "turn_end"]
    log = next((home / "workspaces").glob("*.jsonl")).read_text()
    assert "attempt_recorded" not in log  # the crash lost the record

    app = make_app(home, fake)  # the next start
    try:
        rec = await get(app, project, "D1")
        (attempt,) = rec["attempts"]
        user = next(e for e in _entries(home) if e["type"] == "user")
        assert attempt["repaired"] is True and attempt["prompt"] == user["text"]
        assert attempt["outcome"] == "succeeded" and attempt["answer"].endswith("loud now.")
        assert attempt["patch"]["files"][0]["path"] == "a.txt"
        assert rec["state"] == "implemented" and rec["session"]
        # Repair is idempotent: a second start records nothing more.
        app2 = make_app(home, fake)
        assert len((await get(app2, project, "D1"))["attempts"]) == 1
        assert next((home / "workspaces").glob("*.jsonl")).read_text().count(
            "attempt_recorded") == 1
    finally:
        await app.turns.aclose()


async def test_crash_mid_turn_closes_aborted_and_records(project: Path, tmp_path: Path,
                                                         model: Any) -> None:
    fake = model(lambda body: Reply(text="thinking very slowly", stall=True))
    home = tmp_path / "home"
    proc = subprocess.Popen([sys.executable, str(RUNNER), str(home), str(project),
                             fake.base_url + "/v1", "hang"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ACCEPTED"), line
        deadline = time.monotonic() + 20
        while not fake.api_requests("/v1/chat/completions") and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    kinds = [e["type"] for e in _entries(home)]
    assert "directive_open" in kinds and "directive_close" not in kinds

    app = make_app(home, fake)
    try:
        rec = await get(app, project, "D1")
        (attempt,) = rec["attempts"]
        assert attempt["outcome"] == "aborted" and attempt["repaired"]
        assert "backend stopped" in (attempt["error"] or "")
        assert rec["state"] == "failed" and "retry" in rec["actions"]
        kinds = [e["type"] for e in _entries(home)]
        assert kinds[-2:] == ["directive_close", "turn_end"]
    finally:
        await app.turns.aclose()


async def test_a_live_owner_is_left_to_record_its_own_turn(project: Path, tmp_path: Path,
                                                           model: Any) -> None:
    """While another backend holds the session, its closed turn is not taken over."""
    fake = model(_edit_model)
    home = tmp_path / "home"
    proc = subprocess.Popen([sys.executable, str(RUNNER), str(home), str(project),
                             fake.base_url + "/v1", "hold"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("ACCEPTED")
        assert proc.stdout.readline().startswith("HOLDING")
        app = make_app(home, fake)
        assert (await get(app, project, "D1"))["attempts"] == []
        await app.turns.aclose()
    finally:
        proc.kill()
        proc.wait(timeout=10)
    app2 = make_app(home, fake)  # the owner died: the next start repairs
    try:
        assert (await get(app2, project, "D1"))["attempts"][0]["repaired"] is True
    finally:
        await app2.turns.aclose()
