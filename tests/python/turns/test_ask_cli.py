"""``tandem ask``: one headless turn, its exit codes and its JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from .conftest import interrupt_once_asked


def _ask(fake: FakeOpenAI, project: Path, *args: str, **popen: object) -> subprocess.Popen[str]:
    env = dict(os.environ, OPENAI_BASE_URL=fake.base_url + "/v1", OPENAI_API_KEY="sk-cli")
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(
        [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(project),
         "--provider", "openai:m", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
        env=env, **popen)  # type: ignore[call-overload]


def test_success_streams_and_ends_with_one_json_line(project: Path) -> None:
    script = [Reply(text="Editing.", tool_calls=[ToolCallSpec(
        name="edit_file", input={"path": "a.txt", "old_text": "old", "new_text": "new"})]),
        Reply(text="All done.")]
    with FakeOpenAI(script) as fake:
        proc = _ask(fake, project, "--permission-mode", "auto-edit", "--json", "edit a.txt")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = out.strip().splitlines()
    assert "Editing." in out and "All done." in out
    result = json.loads(lines[-1])
    assert result["outcome"] == "succeeded" and result["turn"] == 1
    assert result["files_changed"] == ["a.txt"]
    assert (project / "a.txt").read_text() == "new\n"
    # --session continues the same session: turn 2.
    with FakeOpenAI([Reply(text="again")]) as fake:
        proc = _ask(fake, project, "--json", "--session", result["session"][:13], "more")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["turn"] == 2


def test_permission_without_a_terminal_is_rejected_and_said(project: Path) -> None:
    script = [Reply(text="Writing.", tool_calls=[ToolCallSpec(
        name="write_file", input={"path": "b.txt", "content": "x"})]), Reply(text="Ok, not.")]
    with FakeOpenAI(script) as fake:
        proc = _ask(fake, project, "--permission-mode", "ask", "--json", "write b")
        out, err = proc.communicate(timeout=60)
    # The turn succeeded, but a tool was refused: its own exit status.
    assert proc.returncode == 3
    assert "no terminal to ask; rejected write_file" in err
    assert "1 tool call was refused (exit status 3)" in err
    assert json.loads(out.strip().splitlines()[-1])["refused"] == 1
    assert not (project / "b.txt").exists()


def test_a_message_never_glues_itself_to_the_streamed_answer(project: Path) -> None:
    """stdout and stderr share the terminal: each message starts on a line of its own."""
    script = [Reply(text="I'll write the file.", tool_calls=[ToolCallSpec(
        name="write_file", input={"path": "b.txt", "content": "x"})]), Reply(text="Ok, not.")]
    with FakeOpenAI(script) as fake:
        proc = _ask(fake, project, "--permission-mode", "ask", "write b",
                    stderr=subprocess.STDOUT)
        out, _ = proc.communicate(timeout=60)
    assert "file.tandem:" not in out
    assert "I'll write the file.\ntandem: no terminal to ask; rejected write_file" in out


def test_a_run_that_fails_before_its_turn_leaves_no_session(project: Path) -> None:
    home = Path(os.environ["TANDEM_HOME"])
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL")}
    proc = subprocess.run(
        [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(project), "hi"],
        capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 1
    assert "provider" in proc.stderr.lower()
    assert not list(home.rglob("*.jsonl")), "an empty session was left behind"
    listed = subprocess.run([sys.executable, "-m", "tandem.cli", "sessions", "--all"],
                            capture_output=True, text=True, timeout=60, env=env)
    assert str(project) not in listed.stdout


def test_provider_failure_exits_1_with_the_providers_message(project: Path) -> None:
    with FakeOpenAI([Reply(status=401, message="Incorrect API key provided")]) as fake:
        proc = _ask(fake, project, "--json", "hi")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "Incorrect API key provided" in err
    assert json.loads(out.strip().splitlines()[-1])["outcome"] == "failed"


def test_bad_provider_name_exits_1(project: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(project), "--provider",
         "bogus", "hi"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "must look like openai:MODEL" in proc.stderr


def test_interrupt_exits_130_and_the_turn_is_closed(project: Path, tmp_path: Path) -> None:
    with FakeOpenAI([Reply(text="slow", stall=True)]) as fake:
        proc = _ask(fake, project, "--json", "wait forever")
        interrupt_once_asked(fake, proc)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    journals = list(Path(os.environ["TANDEM_HOME"]).glob("sessions/*/*.jsonl"))
    ends = [json.loads(line) for j in journals for line in j.read_text().splitlines()
            if '"turn_end"' in line]
    assert ends and ends[-1]["outcome"] == "aborted"
