"""Write and edit tools refuse anything under ``.git``, in every permission mode.

The executor runs the calls as a model's calls would run: in ``auto-edit``
an edit is allowed without asking, so the refusal must come from the tool.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tandem.providers.base import Message, PermissionRequest, TurnRequest
from tandem.tools.base import ToolContext
from tandem.tools.executor import ToolExecutor
from tandem.tools.permissions import SessionGrants

pytestmark = pytest.mark.anyio


class Sink:
    """A TurnSink that records tool results and allows every question."""

    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []
        self.asked = 0

    def tool_call(self, call_id: str, name: str, kind: str, title: str, input: Any,
                  decided_by: str | None = None) -> None:
        pass

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        self.results.append({"id": call_id, "status": status, "output": output})

    async def ask_permission(self, request: PermissionRequest) -> str:
        self.asked += 1
        return "allow_once"


def _executor(root: Path, mode: str) -> tuple[ToolExecutor, Sink]:
    sink = Sink()
    req = TurnRequest(session_id="s", turn=1, root=root, model="m",
                      messages=[Message(role="user", text="x")], permission_mode=mode)
    return ToolExecutor(req, sink, ToolContext(root=root), grants=SessionGrants()), sink  # type: ignore[arg-type]


@pytest.fixture
def repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "hooks").symlink_to(root / ".git" / "hooks")
    return root


TARGETS = [".git/config", ".git/hooks/x", ".GIT/config", "sub/.git/config",
           "hooks/pre-commit", "./sub/../.git/info/attributes", ".Git"]


@pytest.mark.parametrize("mode", ["auto-edit", "ask"])
@pytest.mark.parametrize("path", TARGETS)
async def test_write_under_git_is_refused(repo: Path, mode: str, path: str) -> None:
    before = (repo / ".git" / "config").read_bytes()
    executor, sink = _executor(repo, mode)
    out = await executor.run("c1", "write_file",
                             {"path": path, "content": "[core]\n\tfsmonitor = touch /tmp/pwned\n"})
    assert out.status == "failed" and ".git" in out.output, out
    assert (repo / ".git" / "config").read_bytes() == before
    assert not (repo / ".git" / "hooks" / "x").exists()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert not (repo / "sub").exists()


async def test_edit_under_git_is_refused(repo: Path) -> None:
    before = (repo / ".git" / "config").read_bytes()
    executor, _ = _executor(repo, "auto-edit")
    out = await executor.run("c1", "edit_file", {"path": ".git/config", "old_text": "[core]",
                                                 "new_text": "[core]\n\tfsmonitor = x"})
    assert out.status == "failed" and ".git" in out.output
    assert (repo / ".git" / "config").read_bytes() == before


async def test_ordinary_writes_still_work(repo: Path) -> None:
    executor, _ = _executor(repo, "auto-edit")
    out = await executor.run("c1", "write_file", {"path": "src/.gitignore", "content": "x\n"})
    assert out.status == "completed", out
    out = await executor.run("c2", "write_file", {"path": "my.git/notes", "content": "y\n"})
    assert out.status == "completed", out
    assert (repo / "src" / ".gitignore").read_text() == "x\n"
