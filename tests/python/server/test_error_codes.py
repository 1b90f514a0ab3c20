"""The one enumeration of error codes: sentences, the run-time check, the wire, the files.

Messages name no keys; an error names the Emacs command that is the way out
in ``command``, which reaches Emacs as ``:command`` and the CLI in words.
"""

from __future__ import annotations

import ast
import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from tandem.protocol import errors_el
from tandem.protocol.base import MethodSpec, Params, TandemError
from tandem.protocol.errors import CLIENT_CODES, CODES, COMMANDS, ErrorCode
from tandem.protocol.sexp import Symbol
from tandem.server import framing
from tandem.server.connection import Connection
from tandem.store.journal import Journal

ROOT = Path(__file__).resolve().parents[3]


def test_every_code_has_one_sentence_and_the_type_lists_them_all() -> None:
    assert set(get_args(ErrorCode)) == set(CODES)
    assert not set(CODES) & set(CLIENT_CODES)
    for code, text in {**CODES, **CLIENT_CODES}.items():
        assert text.endswith(".") and len(text.split()) >= 6, code
        assert "C-c" not in text and "M-x" not in text, code


def test_an_unknown_code_or_command_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="unknown error code 'no-such-code'"):
        TandemError("no-such-code", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown command 'kill-emacs'"):
        TandemError("busy", "x", command="kill-emacs")  # type: ignore[arg-type]
    assert TandemError("busy", "x", command="tandem-cancel-turn").command in COMMANDS


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants of TREE that are not docstrings."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_no_backend_string_names_a_key_binding() -> None:
    found = []
    for path in sorted((ROOT / "python" / "tandem").rglob("*.py")):
        if path.name == "errors.py" and path.parent.name == "protocol":
            continue  # shell_text: the CLI's own words for a command
        for line, text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if "C-c " in text or "C-c)" in text or "M-x " in text:
                found.append(f"{path.relative_to(ROOT)}:{line}: {text!r}")
    assert not found, "messages name the command (command=…), not a key:\n" + "\n".join(found)


class AnyParams(Params):
    """Anything."""

    model_config = {"extra": "allow"}


async def _refuses_with_command(app: Any, p: AnyParams) -> Any:
    raise TandemError("busy", "A turn is running; cancel it first", {"turn": 2},
                      command="tandem-cancel-turn")


async def _refuses_plainly(app: Any, p: AnyParams) -> Any:
    raise TandemError("not-found", "No such session")


def test_the_wire_error_carries_the_command_and_only_when_named() -> None:
    async def main() -> list[Any]:
        methods = {s.name: s for s in [
            MethodSpec("hello", AnyParams, lambda a, p: asyncio.sleep(0, "hi"), ""),
            MethodSpec("with-command", AnyParams, _refuses_with_command, ""),
            MethodSpec("plain", AnyParams, _refuses_plainly, "")]}

        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            await Connection(r, w, methods, None, "t").serve()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.sockets[0].getsockname()[1])
        replies = []
        for uid, (name, params) in enumerate(
                [("hello", {"token": "t"}), ("with-command", {}), ("plain", {})], 1):
            writer.write(framing.encode_frame([Symbol("call"), uid, Symbol(name), [params]]))
            replies.append(await framing.read_frame(reader))
        writer.close()
        server.close()
        return replies[1:]

    with_command, plain = asyncio.run(main())
    assert with_command == ["return-error", 2, {
        "code": "busy", "message": "A turn is running; cancel it first", "data": {"turn": 2},
        "command": "tandem-cancel-turn"}]
    assert plain[2] == {"code": "not-found", "message": "No such session", "data": None}


def test_tandem_ask_names_the_emacs_command_in_shell_words(tmp_path: Path) -> None:
    gone, here = tmp_path / "gone", tmp_path / "here"
    gone.mkdir()
    here.mkdir()
    journal = Journal.create(Path(os.environ["TANDEM_HOME"]), str(gone.resolve()))
    journal.close()
    shutil.rmtree(gone)
    proc = subprocess.run(
        [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(here), "--session",
         journal.id, "--provider", "openai:m", "hi"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "moving it needs your consent" in proc.stderr
    assert proc.stderr.rstrip().endswith("(in Emacs: M-x tandem-resume)")


def test_the_elisp_conditions_are_generated_from_the_enumeration() -> None:
    text = (ROOT / "elisp" / "tandem-errors.el").read_text(encoding="utf-8")
    assert text == errors_el.render(), (
        "elisp/tandem-errors.el drifted: run `make protocol-doc`")
    for code in {**CODES, **CLIENT_CODES}:
        assert f'("{code}"\n' in text
    for command in COMMANDS:
        assert f"    {command}" in text or f"'({command}" in text


def test_the_protocol_doc_lists_every_code_with_its_sentence() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    for code, sentence in {**CODES, **CLIENT_CODES}.items():
        assert f"| `{code}` | {sentence} |" in text
