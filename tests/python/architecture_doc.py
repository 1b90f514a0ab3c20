"""Generate the package graph and the file map of ``docs/architecture.md``.

The regions between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``
are written from the code as it is: the package graph from the imports
`importgraph` reads, the file map from the first paragraph of each Python module's docstring and
each elisp file's summary line. The prose around them is hand-written.

``make architecture-doc`` rewrites the regions in place;
``test_architecture.py`` fails when they differ from what this produces.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from pathlib import Path

import importgraph as g

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
_END = "<!-- end generated -->"
_REGION = re.compile(r"(<!-- generated: ([a-z-]+) -->\n)(.*?)(" + re.escape(_END) + ")",
                     re.DOTALL)
_ELISP_SUMMARY = re.compile(r"^;;; \S+\.el --- (.*?)(?:\s+-\*-.*)?$")


def _summary(doc: str) -> str:
    """The docstring's first paragraph on one line (a summary may wrap)."""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def python_modules(root: Path = ROOT / "python") -> dict[str, str]:
    """Module path under ``tandem/`` (``server/framing.py``) -> first paragraph of its docstring."""
    out: dict[str, str] = {}
    base = root / "tandem"
    for path in sorted(base.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if not doc:
            raise ValueError(f"{path.relative_to(root)} has no module docstring")
        out[path.relative_to(base).as_posix()] = _summary(doc)
    return out


def elisp_files(root: Path = ROOT / "elisp") -> dict[str, str]:
    """File name (``tandem-view.el``) -> the summary of its first line."""
    out: dict[str, str] = {}
    for path in sorted(root.glob("*.el")):
        first = path.read_text(encoding="utf-8").split("\n", 1)[0]
        found = _ELISP_SUMMARY.match(first)
        if not found:
            raise ValueError(f"elisp/{path.name}: no ';;; FILE.el --- summary' first line")
        out[path.name] = found.group(1).strip()
    return out


def _packages(modules: dict[str, str]) -> list[str]:
    """Every package and top-level module, named as `importgraph.package_of` names them."""
    return sorted({m.split("/")[0].removesuffix(".py") for m in modules} - {"__init__"})


def _depth(graph: dict[str, set[str]], pkg: str, seen: dict[str, int]) -> int:
    """The longest import path from PKG down to a package that imports none."""
    if pkg not in seen:
        seen[pkg] = 0  # a cycle (the test fails on it) must not recurse forever
        seen[pkg] = 1 + max((_depth(graph, t, seen) for t in graph.get(pkg, ())), default=-1)
    return seen[pkg]


def render_packages(imports: list[g.Import], modules: dict[str, str]) -> str:
    """The package graph: one line per package, what it may import, top to bottom."""
    graph = g.package_graph(imports)
    eager = g.package_graph(i for i in imports if not i.in_function)
    seen: dict[str, int] = {}
    names = _packages(modules)
    order = sorted(names, key=lambda p: (-_depth(graph, p, seen), p))
    width = max(len(p) for p in names)
    lines = []
    for pkg in order:
        targets = sorted(graph.get(pkg, set()))
        shown = [t if t in eager.get(pkg, set()) else t + "*" for t in targets]
        lines.append(f"{pkg:<{width}}  ──>  {', '.join(shown)}" if shown else pkg)
    return "```\n" + "\n".join(lines) + "\n```\n"


def render_python_files(modules: dict[str, str]) -> str:
    """The Python file map: each package with its modules and their first docstring line."""
    out: list[str] = []
    for pkg in _packages(modules):
        init = f"{pkg}/__init__.py"
        if init in modules:
            out.append(f"* `{pkg}/` — {modules[init]}")
            for path, line in modules.items():
                if path.startswith(pkg + "/") and path != init:
                    out.append(f"  * `{path.removeprefix(pkg + '/')}` — {line}")
        else:
            out.append(f"* `{pkg}.py` — {modules[pkg + '.py']}")
    return "\n".join(out) + "\n"


def _group(name: str) -> str:
    stem = name.removesuffix(".el")
    return "tandem" if stem == "tandem" else stem.removeprefix("tandem-").split("-")[0]


def render_elisp_files(files: dict[str, str]) -> str:
    """The elisp file map, grouped by the word after ``tandem-``."""
    groups: dict[str, list[str]] = {}
    for name, summary in files.items():
        groups.setdefault(_group(name), []).append(f"  * `{name}` — {summary}")
    out: list[str] = []
    for group in sorted(groups):
        out.append(f"* {group}")
        out.extend(groups[group])
    return "\n".join(out) + "\n"


def regions() -> dict[str, Callable[[], str]]:
    """Region name -> what fills it."""
    modules = python_modules()
    imports = g.scan(ROOT / "python")
    return {
        "packages": lambda: render_packages(imports, modules),
        "python-files": lambda: render_python_files(modules),
        "elisp-files": lambda: render_elisp_files(elisp_files()),
    }


def update(text: str, fill: dict[str, Callable[[], str]] | None = None) -> str:
    """TEXT with each generated region's body written afresh; every region must be there."""
    fill = regions() if fill is None else fill
    found: set[str] = set()

    def one(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in fill:
            raise ValueError(f"unknown generated region {name!r}")
        found.add(name)
        return match.group(1) + fill[name]() + match.group(4)

    result = _REGION.sub(one, text)
    missing = sorted(set(fill) - found)
    if missing:
        raise ValueError(f"docs/architecture.md lacks the generated regions {missing}")
    return result


def main(argv: list[str]) -> int:
    """Rewrite the regions of docs/architecture.md (or of the file named) in place."""
    path = Path(argv[0]) if argv else DOC
    text = path.read_text(encoding="utf-8")
    new = update(text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
