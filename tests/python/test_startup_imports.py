"""What `tandem ask` and the command line import (start-up).

A real ``tandem ask`` process (``python -X importtime -m tandem.cli``) runs one
turn against the fake OpenAI server; every module it imported is read from
its import log. Code of other commands and other providers must not be
among them: the remote side, ACP, the MCP SDK, directives, history
(compaction), rewind, review, the overview, the server and its adapters,
the Anthropic wire format, the session subcommands' handlers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

SOURCE = Path(__file__).resolve().parents[2] / "python"

NOT_FOR_A_PLAIN_ASK = (
    "tandem.remote.", "tandem.providers.acp", "tandem.providers.anthropic", "tandem.mcp.adapter",
    "tandem.mcp.connection", "tandem.directives", "tandem.history", "tandem.rewind",
    "tandem.review", "tandem.overview", "tandem.server", "tandem.adapters",
    "tandem.sessions.commands",
    "tandem.protocol.remote", "tandem.protocol.directives", "tandem.protocol.sessions",
    "tandem.protocol.review", "tandem.protocol.turns", "tandem.config.grants", "tandem.doctor",
    "acp", "mcp", "websockets", "wcmatch", "re2", "epc", "sexpdata",
)
"""Module name prefixes (a trailing dot: the package's modules, not the package itself)."""

REMOTE_ASKED = ("tandem.remote.by_session", "tandem.remote.target_file")
"""What a local turn needs of `tandem.remote`: whether its session has a target file."""


def _unwanted(modules: set[str]) -> list[str]:
    def banned(name: str) -> bool:
        return any(name == p or name.startswith(p if p.endswith(".") else p + ".")
                   for p in NOT_FOR_A_PLAIN_ASK)
    return sorted(m for m in modules if banned(m) and m not in REMOTE_ASKED)


def _imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line
            and not line.rstrip().endswith("package")}


def test_a_plain_ask_imports_only_what_its_turn_uses(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("hello\n")
    with FakeOpenAI([Reply(text="ok")]) as fake:
        env = dict(os.environ, OPENAI_BASE_URL=fake.base_url + "/v1", OPENAI_API_KEY="sk-t")
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "tandem.cli", "ask", "--cwd",
             str(project), "--provider", "openai:m", "--json", "hi"],
            capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["outcome"] == "succeeded"
    modules = _imported(done.stderr)
    assert "tandem.providers.openai" in modules and "tandem.app" in modules  # the log is read
    assert _unwanted(modules) == []


def test_the_checker_sees_what_it_bans() -> None:
    seen = {"tandem.remote", "tandem.remote.target_file", "tandem.remote.mirror", "mcp",
            "mcp.types", "mcpx", "tandem.providers.anthropic", "tandem.providers.openai"}
    assert _unwanted(seen) == ["mcp", "mcp.types", "tandem.providers.anthropic",
                               "tandem.remote.mirror"]


def test_building_the_parser_imports_no_handler_and_every_handler_resolves() -> None:
    code = (
        "import sys, importlib, argparse\n"
        "from tandem.cli import build_parser\n"
        "parser = build_parser()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'httpx')\n"
        "                or m.startswith(('tandem.sessions.commands', 'tandem.sessions.manager',\n"
        "                                 'tandem.ask', 'tandem.app', 'tandem.config.grants')))\n"
        "targets = []\n"
        "def walk(p):\n"
        "    for a in p._actions:\n"
        "        if isinstance(a, argparse._SubParsersAction):\n"
        "            for sub in a.choices.values():\n"
        "                func = sub.get_default('func')\n"
        "                if getattr(func, 'target', None):\n"
        "                    targets.append(func.target)\n"
        "                walk(sub)\n"
        "walk(parser)\n"
        "missing = [t for t in targets if not callable(getattr(importlib.import_module(t[0]),\n"
        "                                                      t[1], None))]\n"
        "import json\n"
        "print(json.dumps({'loaded': loaded, 'targets': targets, 'missing': missing}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=SOURCE)
    found = json.loads(done.stdout)
    assert found["loaded"] == []
    # sessions list/new, resume, continue: each named, each there (``ask`` is the
    # CLI's own `_ask`: the running backend first, then `tandem.ask`).
    assert len(found["targets"]) >= 4 and found["missing"] == []


@pytest.mark.parametrize("argv", [["--help"], ["sessions", "--help"]])
def test_help_loads_no_domain_code(argv: list[str]) -> None:
    code = ("import sys\nfrom tandem.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'"
            " or m.startswith(('tandem.sessions.manager', 'tandem.app'))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=SOURCE)
    assert done.stdout.strip().splitlines()[-1] == "LOADED []"
