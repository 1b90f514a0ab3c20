"""Read the backend's imports with `ast` and check them against the layer rules.

A *package* is the first name under ``tandem`` (``tandem.sessions.manager`` is
in ``sessions``; a top-level module such as ``tandem.cli`` is its own package).
The rules are those of ``docs/architecture.md``:

* no cycle between packages;
* the layer rules in `FORBIDDEN` (domain never imports the server, storage
  never imports the domain, …);
* an import of a tandem module inside a function is allowed only where
  `FUNCTION_IMPORTS_ALLOWED` says why (start-up speed).

The composition root ``tandem.app`` imports every service. Method handlers
(``tandem.adapters``) name it as the type of their first argument under
``if TYPE_CHECKING:`` only (`TYPE_ONLY`): such an import is no runtime edge,
so it is left out of the cycle check, and it is the only way to name ``app``
below it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

DOMAIN = frozenset({"store", "sessions", "directives", "providers", "tools", "checkpoints",
                    "remote", "turns", "config", "history", "mcp", "review", "overview",
                    "rewind", "parallel", "mentions"})
"""Packages that must know nothing of EPC or Emacs (nor of the adapters above them)."""

_ABOVE_ALL = frozenset({"server", "adapters", "app"})
"""The transport, the adapters and the composition root: no domain package imports them."""

FORBIDDEN: dict[str, frozenset[str]] = {
    **{pkg: _ABOVE_ALL for pkg in DOMAIN},
    "store": _ABOVE_ALL | {"sessions", "directives", "providers", "tools", "checkpoints",
                           "remote", "turns", "history", "rewind"},
    "config": _ABOVE_ALL | {"sessions", "directives", "providers", "tools", "checkpoints",
                            "remote", "turns", "history", "rewind"},
    "checkpoints": _ABOVE_ALL | {"sessions", "turns", "directives", "history", "rewind"},
    "providers": _ABOVE_ALL | {"directives", "turns", "sessions", "history", "rewind"},
    "tools": _ABOVE_ALL | {"directives", "turns", "sessions", "providers", "history", "rewind"},
    "sessions": _ABOVE_ALL | {"turns", "directives", "history", "rewind"},
    "turns": _ABOVE_ALL | {"directives", "history", "rewind"},
    "remote": _ABOVE_ALL | {"rewind"},
    "rewind": _ABOVE_ALL | {"history", "directives", "review", "overview", "mcp"},
    "parallel": _ABOVE_ALL | {"history", "directives", "review", "overview", "rewind"},
    "protocol": _ABOVE_ALL | DOMAIN,
    "adapters": frozenset({"server", "app", "cli", "ask"}),
    "mcp": _ABOVE_ALL | {"sessions", "directives", "turns", "history", "rewind"},
    "mentions": _ABOVE_ALL | {"sessions", "directives", "turns", "history", "rewind",
                              "providers", "checkpoints", "remote"},
}
"""PACKAGE -> packages it must not import (``history`` sits above ``turns``).

``rewind`` (the feature package: plan, transaction, recovery, undo, resend,
a remote session's side) sits above ``turns``, ``remote``, ``sessions`` and
``checkpoints`` and below ``history`` (a turn's patch view) and ``review``
(a revert puts a remote session's files back the rewind's way); the app and
the adapters import it. Nothing below it imports it.

``protocol`` is self-contained (its models name no domain type); the
``adapters`` sit between the server and the domain: they import the domain
and the protocol, never the server, and the app only under TYPE_CHECKING."""

TYPE_ONLY: frozenset[str] = frozenset({"tandem.app"})
"""Modules an adapter (or a domain package) may import under ``if TYPE_CHECKING:`` (`App`)."""

_SUBCOMMAND = ("the CLI's start-up: `tandem --help` registers every subcommand; its work loads "
               "when run")
_PORT_LINE = ("`tandem serve`'s port line: the log captures warnings first, then the server's "
              "parts (pydantic and the domain) load")
_DOCTOR = "the doctor: a broken part is a finding, not a crash of `tandem doctor`"
_ABOVE_ENGINE = ("start-up of `tandem ask` and `tandem serve`: the services above "
                 "the engine load with their first use; `ask` uses none of them")
_MCP_SDK = ("start-up of `tandem ask` and `tandem serve`'s port line: the MCP SDK takes ~0.5 s "
            "to import; it loads with the first MCP server that starts")
_REMOTE = ("start-up of `tandem ask` and `tandem serve`: the remote side (its "
           "client, mirror, engine and models) loads with the first session that has a target "
           "file, or the first remote method")
_ONE_FAMILY = ("start-up of `tandem ask`: a turn imports the wire format of its "
               "provider's family only")

FUNCTION_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ("tandem.cli", "tandem.server.main"): _SUBCOMMAND,
    ("tandem.cli", "tandem.doctor"): _SUBCOMMAND,
    ("tandem.cli", "tandem.ask_client"): _SUBCOMMAND,
    ("tandem.cli", "tandem.ask"): _SUBCOMMAND + " (and only when no running backend takes it)",
    ("tandem.cli", "tandem.store.oserrors"): (
        "`tandem serve`'s port line: it pulls pydantic (protocol errors), needed only when a "
        "command fails"),
    ("tandem.config.cli", "tandem.config.grants"): _SUBCOMMAND + " (the settings layers)",
    ("tandem.config.cli", "tandem.config.trust"): _SUBCOMMAND,
    ("tandem.doctor", "tandem.config.grants"): _DOCTOR,
    ("tandem.doctor", "tandem.config.layers"): _DOCTOR,
    ("tandem.server.main", "tandem.app"): _PORT_LINE,
    ("tandem.server.main", "tandem.server.connection"): _PORT_LINE,
    ("tandem.server.main", "tandem.server.ask_socket"): _PORT_LINE,
    ("tandem.server.main", "tandem.server.editor"): _PORT_LINE,
    ("tandem.server.main", "tandem.server.pusher"): _PORT_LINE,
    ("tandem.server.main", "tandem.server.table"): _PORT_LINE,
    ("tandem.server.main", "tandem.turns.engine"): _PORT_LINE,
    ("tandem.app", "tandem.history.compaction"): _ABOVE_ENGINE,
    ("tandem.app", "tandem.rewind.service"): _ABOVE_ENGINE,
    ("tandem.app", "tandem.history.queue"): _ABOVE_ENGINE,
    ("tandem.app", "tandem.overview.facts"): _ABOVE_ENGINE,
    ("tandem.app", "tandem.review.revert"): _ABOVE_ENGINE,
    ("tandem.app", "tandem.parallel.service"): _ABOVE_ENGINE,
    ("tandem.app", "tandem.directives.service"): _ABOVE_ENGINE,
    ("tandem.mcp.service", "tandem.mcp.adapter"): _MCP_SDK,
    ("tandem.mcp.service", "tandem.mcp.connection"): _MCP_SDK,
    ("tandem.turns.service", "tandem.remote.engine"): _REMOTE,
    ("tandem.turns.service", "tandem.remote.agent_llm"): _REMOTE,
    ("tandem.app", "tandem.remote.service"): _REMOTE,
    ("tandem.app", "tandem.remote.checkpoints"): _REMOTE,
    ("tandem.app", "tandem.remote.agent_llm"): _REMOTE,
    ("tandem.providers.families", "tandem.providers.openai"): _ONE_FAMILY,
    ("tandem.providers.families", "tandem.providers.anthropic"): _ONE_FAMILY,
    ("tandem.providers.registry", "tandem.providers.acp"): (
        "start-up of `tandem serve` and `tandem ask`: the acp SDK takes ~1.5 s to import; "
        "it loads with the first ACP provider"),
}
"""(importing module, imported module) -> why the import sits in a function.

Only start-up speed (the CLI's subcommands, `tandem serve`'s port line) and
the doctor are reasons; anything else is a top-level import."""


@dataclass(frozen=True)
class Import:
    """One ``import`` of a tandem module."""

    module: str
    """The importing module (``tandem.adapters.sessions``)."""
    target: str
    """The imported module (``tandem.turns.service``)."""
    line: int
    in_function: bool
    """True when the import statement sits inside a function body."""
    type_only: bool = False
    """True when it sits under ``if TYPE_CHECKING:`` (no runtime import)."""

    @property
    def exempt(self) -> bool:
        """A type-only import of a `TYPE_ONLY` module: no edge, no layer break."""
        return self.type_only and self.target in TYPE_ONLY

    @property
    def source_pkg(self) -> str:
        """The importing package."""
        return package_of(self.module)

    @property
    def target_pkg(self) -> str:
        """The imported package."""
        return package_of(self.target)


def package_of(module: str) -> str:
    """``tandem.X.…`` -> ``X``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(root: Path, path: Path) -> str:
    """The dotted module name of PATH under ROOT (the folder holding ``tandem``)."""
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(source: str, module: str, is_package: bool = False) -> list[Import]:
    """Every import of a ``tandem`` module in SOURCE (the text of MODULE)."""
    tree = ast.parse(source)
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool, typing: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "tandem":
                        found.append(Import(module, alias.name, child.lineno, in_function,
                                            typing))
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(module, is_package, child)
                if target.split(".")[0] == "tandem":
                    found.append(Import(module, target, child.lineno, in_function, typing))
            visit(child, inside, typing or _is_type_checking(child))

    visit(tree, False, False)
    return found


def _is_type_checking(node: ast.AST) -> bool:
    """Whether NODE is ``if TYPE_CHECKING:`` (or ``if typing.TYPE_CHECKING:``)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def scan(root: Path) -> list[Import]:
    """Every tandem import of every module under ROOT/tandem."""
    result: list[Import] = []
    for path in sorted((root / "tandem").rglob("*.py")):
        name = module_name(root, path)
        result.extend(imports_of(path.read_text(encoding="utf-8"), name,
                                 path.name == "__init__.py"))
    return result


def package_graph(imports: Iterable[Import]) -> dict[str, set[str]]:
    """Package -> packages it imports (self-edges dropped)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        if imp.source_pkg == "tandem" or imp.target_pkg == "tandem" or imp.exempt:
            continue
        graph.setdefault(imp.source_pkg, set())
        if imp.source_pkg != imp.target_pkg:
            graph[imp.source_pkg].add(imp.target_pkg)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(out)


def layer_violations(imports: Iterable[Import]) -> list[str]:
    """``module -> target`` for every import a rule in `FORBIDDEN` refuses."""
    return sorted({
        f"{imp.module} -> {imp.target}"
        for imp in imports
        if imp.target_pkg in FORBIDDEN.get(imp.source_pkg, frozenset()) and not imp.exempt
    })


def module_cycles(imports: Iterable[Import], package: str) -> list[list[str]]:
    """The cycles between the modules of PACKAGE, by their run-time imports.

    A type-only import (under ``if TYPE_CHECKING:``) is no edge, nor is a
    function-level one: neither runs when the module loads.
    """
    graph: dict[str, set[str]] = {}
    for imp in imports:
        if imp.source_pkg != package or imp.target_pkg != package:
            continue
        graph.setdefault(imp.module, set())
        if not (imp.type_only or imp.in_function) and imp.module != imp.target:
            graph[imp.module].add(imp.target)
    return cycles(graph)


def function_imports(imports: Iterable[Import],
                     allowed: Mapping[tuple[str, str], str] = FUNCTION_IMPORTS_ALLOWED
                     ) -> list[str]:
    """``module -> target`` for every function-level tandem import not in ALLOWED."""
    return sorted({
        f"{imp.module} -> {imp.target}"
        for imp in imports
        if imp.in_function and (imp.module, imp.target) not in allowed
    })
