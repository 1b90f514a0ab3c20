"""The architecture test: the backend's packages form a one-way graph.

It reads the imports with `ast` (`importgraph`). What today's code still
breaks is listed in `DEBT`, each with the reason it is there; the test fails
on anything new *and* on a listed item that no longer occurs, so the list can
only shrink; it is empty now.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import importgraph as g

SOURCE = Path(__file__).resolve().parents[2] / "python"

DEBT: dict[str, dict[str, str]] = {
    "cycles": {},
    "layers": {},
    "function_imports": {},
}
"""Empty: the graph has no debt. Function-level imports that stay are allowed, with why,
in `importgraph.FUNCTION_IMPORTS_ALLOWED`."""


def _found() -> dict[str, set[str]]:
    imports = g.scan(SOURCE)
    return {
        "cycles": {" ".join(c) for c in g.cycles(g.package_graph(imports))},
        "layers": set(g.layer_violations(imports)),
        "function_imports": set(g.function_imports(imports)),
    }


def test_no_new_violations_and_debt_only_shrinks() -> None:
    found = _found()
    for kind, listed in DEBT.items():
        new = sorted(found[kind] - set(listed))
        gone = sorted(set(listed) - found[kind])
        assert not new, f"{kind}: new violations {new}"
        assert not gone, f"{kind}: fixed, remove from DEBT: {gone}"


def test_every_debt_item_says_why() -> None:
    assert all(reason.strip() for items in DEBT.values() for reason in items.values())


def test_the_function_import_allowlist_says_why_and_holds_only_what_occurs() -> None:
    imports = g.scan(SOURCE)
    inside = {(i.module, i.target) for i in imports if i.in_function}
    assert all(reason.strip() for reason in g.FUNCTION_IMPORTS_ALLOWED.values())
    stale = sorted(set(g.FUNCTION_IMPORTS_ALLOWED) - inside)
    assert not stale, f"no longer a function-level import, remove from the allowlist: {stale}"


# The test of the test: the checker sees cycles, broken layers and function imports.

def _graph_of(sources: dict[str, str]) -> list[g.Import]:
    out: list[g.Import] = []
    for module, text in sources.items():
        out.extend(g.imports_of(text, module))
    return out


def test_checker_finds_a_cycle_and_a_broken_layer() -> None:
    imports = _graph_of({
        "tandem.sessions.api": "from tandem.turns.service import TurnService\n",
        "tandem.turns.service": "from tandem.sessions import manager\n",
        "tandem.store.journal": "import tandem.directives.models\n",
    })
    assert g.cycles(g.package_graph(imports)) == [["sessions", "turns"]]
    assert g.layer_violations(imports) == [
        "tandem.sessions.api -> tandem.turns.service",
        "tandem.store.journal -> tandem.directives.models",
    ]


def test_checker_finds_function_level_and_relative_imports() -> None:
    text = "def f():\n    from ..turns import engine\n    return engine\n"
    imports = g.imports_of(text, "tandem.sessions.projection")
    assert [(i.target, i.in_function) for i in imports] == [("tandem.turns", True)]
    assert g.function_imports(imports) == ["tandem.sessions.projection -> tandem.turns"]
    assert g.function_imports(imports, {("tandem.sessions.projection", "tandem.turns"): "why"}
                              ) == []


def test_a_type_only_import_of_the_app_is_no_edge_but_a_runtime_one_breaks_layers() -> None:
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tandem.app import App\n"
    imports = _graph_of({"tandem.sessions.api": typed,
                         "tandem.app": "from tandem.sessions.service import SessionService\n"})
    assert [i.type_only for i in imports] == [True, False]
    assert g.cycles(g.package_graph(imports)) == []
    assert g.layer_violations(imports) == []
    runtime = _graph_of({"tandem.sessions.api": "from tandem.app import App\n",
                         "tandem.app": "from tandem.sessions.service import SessionService\n"})
    assert g.cycles(g.package_graph(runtime)) == [["app", "sessions"]]
    assert g.layer_violations(runtime) == ["tandem.sessions.api -> tandem.app"]


def test_history_sits_above_turns() -> None:
    imports = _graph_of({
        "tandem.history.compaction": "from tandem.turns.service import TurnService\n",
        "tandem.turns.api": "from tandem.history.compaction import CompactionService\n",
        "tandem.sessions.projection": "from tandem.history import compaction\n",
    })
    assert g.layer_violations(imports) == [
        "tandem.sessions.projection -> tandem.history",
        "tandem.turns.api -> tandem.history.compaction",
    ]


def test_rewind_is_one_package_between_turns_and_history() -> None:
    # Rewind imports the engine, the remote side, sessions and checkpoints; history,
    # review, the app and the adapters import it; nothing below it does.
    imports = _graph_of({
        "tandem.rewind.service": "from tandem.turns.service import TurnService\n"
                                 "from tandem.rewind.remote import put_back\n",
        "tandem.rewind.remote": "from tandem.remote.push import PushState\n",
        "tandem.rewind.plan": "from tandem.history.compaction import CompactionService\n",
        "tandem.history.turn_patch": "from tandem.rewind.service import RewindService\n",
        "tandem.review.revert": "from tandem.rewind.remote import record_push\n",
        "tandem.sessions.projection": "from tandem.rewind.plan import turn_facts\n",
        "tandem.turns.engine": "import tandem.rewind.recovery\n",
        "tandem.remote.push": "from tandem.rewind import remote\n",
        "tandem.store.turn_index": "from tandem.rewind.plan import TurnFacts\n",
    })
    assert g.layer_violations(imports) == [
        "tandem.remote.push -> tandem.rewind",
        "tandem.rewind.plan -> tandem.history.compaction",
        "tandem.sessions.projection -> tandem.rewind.plan",
        "tandem.store.turn_index -> tandem.rewind.plan",
        "tandem.turns.engine -> tandem.rewind.recovery",
    ]


def test_the_rewind_modules_import_one_way() -> None:
    # Inside the package no module needs one that needs it back when it loads: the undo
    # and resend name `RewindService` for their types only.
    assert g.module_cycles(g.scan(SOURCE), "rewind") == []
    imports = _graph_of({
        "tandem.rewind.service": "from tandem.rewind.undo import RewindUndo\n",
        "tandem.rewind.undo": "from tandem.rewind.service import RewindService\n",
        "tandem.rewind.resend": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                "    from tandem.rewind.service import RewindService\n",
    })
    assert g.module_cycles(imports, "rewind") == [["tandem.rewind.service",
                                                   "tandem.rewind.undo"]]


def test_the_last_cycle_providers_tools_is_seen_and_gone() -> None:
    # The imports that made it (tools naming providers.base's types) are a cycle and a
    # broken layer to the checker; the tree today has no cycle at all.
    imports = _graph_of({
        "tandem.tools.executor": "from tandem.providers.base import TurnSink\n",
        "tandem.providers.native": "from tandem.tools.executor import ToolExecutor\n",
    })
    assert g.cycles(g.package_graph(imports)) == [["providers", "tools"]]
    assert g.layer_violations(imports) == ["tandem.tools.executor -> tandem.providers.base"]
    assert _found()["cycles"] == set()


def test_serve_and_the_cli_load_no_pydantic_before_their_command_runs() -> None:
    # What makes the `_PORT_LINE` and `_SUBCOMMAND` allowances true: importing the
    # command line and `tandem serve`'s entry loads neither pydantic nor a domain package.
    code = ("import sys, tandem.cli, tandem.server.main\n"
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'"
            " or m.startswith(('tandem.sessions', 'tandem.turns', 'tandem.app')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=SOURCE)
    assert done.stdout.strip() == ""


def test_the_adapter_layer_sits_between_the_server_and_a_self_contained_protocol() -> None:
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tandem.app import App\n"
    imports = _graph_of({
        "tandem.adapters.sessions": typed + "from tandem.sessions.manager import Active\n"
                                            "from tandem.protocol.sessions import NewParams\n",
        "tandem.adapters.core": "from tandem.server.connection import CURRENT\n",
        "tandem.adapters.turns": "from tandem.app import App\n",
        "tandem.sessions.manager": "from tandem.adapters import sessions\n",
        "tandem.protocol.sessions": "from tandem.store.models import Entry\n",
        "tandem.server.table": "from tandem.adapters import core\n",
    })
    assert g.layer_violations(imports) == [
        "tandem.adapters.core -> tandem.server.connection",
        "tandem.adapters.turns -> tandem.app",
        "tandem.protocol.sessions -> tandem.store.models",
        "tandem.sessions.manager -> tandem.adapters",
    ]



def test_methods_live_in_the_adapters_only() -> None:
    # No domain `api` module is left: every method table is an adapter module.
    root = SOURCE / "tandem"
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                  if p.stem == "api" or p.stem.endswith("_api"))
    assert left == []
    from tandem.server.table import DOMAIN_APIS
    assert all(m.startswith("tandem.adapters.") for m in DOMAIN_APIS)


def test_each_namespace_has_its_adapter_module() -> None:
    # `sessions/rewind` is in tandem.adapters.sessions, `directives/act` in …directives;
    # the un-namespaced methods (hello, ping, page, doctor) are the core's.
    import importlib

    from tandem.server.table import DOMAIN_APIS
    for name in DOMAIN_APIS:
        module = name.rsplit(".", 1)[1]
        for spec in importlib.import_module(name).METHODS:
            space = spec.name.split("/")[0] if "/" in spec.name else "core"
            assert space == module, f"{spec.name} is declared in {name}"


# docs/architecture.md's package graph and file map are generated from the code.

def test_architecture_doc_regions_match_the_code() -> None:
    import architecture_doc
    text = architecture_doc.DOC.read_text(encoding="utf-8")
    assert text == architecture_doc.update(text), (
        "docs/architecture.md's generated regions drifted from the code: run "
        "`make architecture-doc`")


def test_the_generated_graph_names_every_package_and_the_edges_the_code_has() -> None:
    import architecture_doc
    modules = architecture_doc.python_modules()
    graph = architecture_doc.render_packages(g.scan(SOURCE), modules)
    lines = {line.split()[0]: line for line in graph.splitlines()[1:-1]}
    assert {"lru", "reaper", "gcpause", "editor", "server", "protocol"} <= set(lines)
    assert "sexp" not in lines and "protocol/sexp.py" in modules
    for pkg, target in [("turns", "remote"), ("rewind", "remote"), ("history", "rewind"),
                        ("checkpoints", "providers")]:
        assert target in lines[pkg].split("──>")[1], (pkg, target)
    # turns imports remote only inside a function (on first use): marked.
    assert "remote*" in lines["turns"]
    files = architecture_doc.render_elisp_files(architecture_doc.elisp_files())
    assert "* view\n" in files and "`tandem-view-gc.el` —" in files


def test_the_generator_refuses_a_doc_without_its_regions() -> None:
    import pytest

    import architecture_doc
    fill = {"packages": lambda: "graph\n"}
    marked = "prose\n<!-- generated: packages -->\nold\n<!-- end generated -->\nmore\n"
    assert architecture_doc.update(marked, fill) == marked.replace("old\n", "graph\n")
    with pytest.raises(ValueError, match="lacks the generated regions"):
        architecture_doc.update("prose only\n", fill)
    with pytest.raises(ValueError, match="unknown generated region"):
        architecture_doc.update(marked.replace("packages", "other"), fill)


# Readers of the repository cannot see the tracker: no text cites its numbers.

_TRACKER = re.compile("|".join([
    r"\b(?:[Ii]ssues?|[Tt]asks?|[Ff]indings?) \d+\b",  # not "issue #551" of an upstream project
    r"(?<![:\w-])[Ii]tems? \d+\b(?!\d)",  # not the `:items 10000` of a request
    "DESIGN" + r"\.md",
    r"\bseeds" + "/",
]))


_NOT_THE_REPOSITORY = frozenset({".git", ".venv", ".cache", "__pycache__", ".mypy_cache",
                                 ".ruff_cache", ".pytest_cache"})


def _repository_files() -> list[Path]:
    """Every file of the checkout, tracked or not, that git does not ignore.

    Without git (a copy of the tree), every file outside the build and cache folders."""
    top = SOURCE.parent
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True,
                                cwd=top).stdout
    except (OSError, subprocess.CalledProcessError):
        return [p for p in top.rglob("*")
                if p.is_file() and not _NOT_THE_REPOSITORY & set(p.relative_to(top).parts)]
    return [top / name for name in listed.decode().split("\0") if name and (top / name).is_file()]


def test_no_file_cites_a_tracker_number_or_the_design_notes() -> None:
    hits = []
    for path in _repository_files():
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if found := _TRACKER.search(line):
                hits.append(f"{path.relative_to(SOURCE.parent)}:{number}: {found.group(0)!r}")
    assert not hits, "reword by subject (readers cannot see the tracker):\n" + "\n".join(hits)


def test_the_tracker_pattern_sees_numbers_and_spares_upstream_links() -> None:
    # Written with "_" for the space, so this file does not cite what it tests.
    for cited in ["see issue_16", "Issue_17: install", "(item_3)", "items_4 to 7",
                  "task_2", "findings_5 and 10", "DESIGN" + ".md", "seeds" + "/x"]:
        assert _TRACKER.search(cited.replace("_", " ")), cited
    for fine in ["claude-agent-acp issue #551", "(list :items 1000)", "line item", "#40"]:
        assert not _TRACKER.search(fine), fine


_PENDING: dict[str, str] = {}
"""Files docs/architecture.md names before they land, with why (tolerated, never required)."""


def test_every_file_architecture_md_names_exists() -> None:
    # The walkthrough and the prose name real files: a rename must update them.
    top = SOURCE.parent
    text = (top / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:python/tandem|elisp|tests/python|docs)/[\w/.-]+\.(?:py|el|md))`",
                           text))
    assert "python/tandem/directives/prompts.py" in named
    missing = sorted(p for p in named - set(_PENDING) if not (top / p).is_file())
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


# A provider family is one row (`tandem.providers.families`).

FAMILY_WORD = r"\b(openai|anthropic)\b"
"""The built-in family names, as a lowercase word (``openai``, ``openai:MODEL``,
``anthropic-version``); ``OpenAI`` in prose is not one."""

FAMILY_MODULES = frozenset({"providers/families.py", "providers/openai.py",
                            "providers/anthropic.py"})
"""The table, and the two wire-format modules, which speak their API (its headers, hosts)."""


def _family_literals(path: Path, root: Path = SOURCE) -> list[str]:
    import ast
    import re

    tree = ast.parse(path.read_text(encoding="utf-8"))
    # A statement that is only a string is a docstring (of a module, class, function or
    # attribute): prose, which may name a family. Any other string is a value.
    prose = {id(n.value) for n in ast.walk(tree)
             if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [f"{path.relative_to(root)}:{n.lineno}: {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in prose and re.search(FAMILY_WORD, n.value)]


def test_a_family_is_named_only_in_its_row() -> None:
    """No string literal of python/tandem names a built-in family, outside the table.

    The rule, precisely: in every ``python/tandem/**/*.py`` but `FAMILY_MODULES`,
    no string constant (f-string parts included) that is not a docstring
    contains `FAMILY_WORD`. So a family is chosen, configured, listed and
    named in messages through `tandem.providers.families` only, and a new
    row is all a new family needs. Identifiers are no literals: the settings
    fields ``openai``/``anthropic`` of `tandem.config.model` (config sits below
    providers) are checked against the table when it loads.
    """
    root = SOURCE / "tandem"
    found = [hit for p in sorted(root.rglob("*.py"))
             if str(p.relative_to(root)) not in FAMILY_MODULES for hit in _family_literals(p)]
    assert found == []


def test_the_family_rule_sees_a_literal_and_skips_prose(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text('"""Talks to anthropic."""\n'
                      'X = {"openai": 1}\n'
                      'def f(n):\n    """For openai:MODEL."""\n    return f"use anthropic:{n}"\n'
                      'Y = "OpenAI-compatible"\n')
    hits = [h.split(": ", 1)[1] for h in _family_literals(source, tmp_path)]
    assert hits == ["'openai'", "'use anthropic:'"]

