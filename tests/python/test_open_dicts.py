"""``dict[str, Any]`` stays only where data is truly open, and each such place is named.

The count includes every alias of it: a module-level name whose definition
holds ``dict[str, Any]`` (or another such alias) counts each time it is used,
so renaming the open dict does not hide it. Each file still holding one must
be listed in docs/architecture.md, section "Where data stays open".
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "tandem"
LIMIT = 80
SECTION = "## Where data stays open"

OPEN = re.compile(r"\b(?:typing\.)?[Dd]ict\[\s*str\s*,\s*(?:typing\.)?Any\s*\]")


def _aliases(trees: dict[Path, tuple[str, ast.Module]]) -> set[tuple[Path, str]]:
    """(module, name) of each module-level name defined as a type holding
    ``dict[str, Any]`` or such a name."""
    found: set[tuple[Path, str]] = set()
    changed = True
    while changed:
        changed = False
        names = {name for _, name in found}
        for path, (_text, tree) in trees.items():
            for node in tree.body:
                name, value = _definition(node)
                if name is None or value is None or (path, name) in found:
                    continue
                if OPEN.search(ast.unparse(value)) or _uses(value, names):
                    found.add((path, name))
                    changed = True
    return found


def _definition(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """The NAME and value of a module-level ``NAME = …``, ``NAME: TypeAlias = …``, ``type``."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 \
            and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
            and node.value is not None and "TypeAlias" in ast.dump(node.annotation):
        return node.target.id, node.value
    type_alias = getattr(ast, "TypeAlias", None)
    if type_alias is not None and isinstance(node, type_alias):
        return node.name.id, node.value  # type: ignore[attr-defined]
    return None, None


def _uses(node: ast.AST, names: set[str], attributes: set[str] | None = None) -> int:
    """How many times NODE names one of NAMES (a name, a quoted annotation), or ATTRIBUTES."""
    count = 0
    attributes = names if attributes is None else attributes
    either = "|".join(map(re.escape, sorted(names)))
    quoted = re.compile(rf"(?<![\w.])(?:{either})(?!\w)") if names else None
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in names \
                or isinstance(sub, ast.Attribute) and sub.attr in attributes:
            count += 1
        elif quoted is not None and isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            count += len(quoted.findall(sub.value))
    return count


def open_dicts(package: Path) -> Counter[str]:
    """Per file under PACKAGE (relative path): its ``dict[str, Any]`` plus its aliases' uses."""
    trees = {}
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        trees[path] = (text, ast.parse(text))
    defined = _aliases(trees)
    aliases = {name for _, name in defined}
    counts: Counter[str] = Counter()
    for path, (text, tree) in trees.items():
        n = len(OPEN.findall(text))
        # The aliases this module defines or imports by name (another module's
        # unrelated name of the same spelling is not one); ``mod.Alias`` anywhere.
        mine = {name for where, name in defined if where == path}
        mine |= {a.asname or a.name for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) for a in node.names if a.name in aliases}
        if aliases:
            # A definition's own name is no use; docstrings are none either.
            n += _uses(tree, mine, aliases) - sum(_uses(d, mine, aliases)
                                                  for d in _docstrings(tree))
        if n:
            counts[path.relative_to(package).as_posix()] = n
    return counts


def _docstrings(tree: ast.Module) -> list[ast.Constant]:
    """Every docstring (module, class, function, attribute) of TREE."""
    out: list[ast.Constant] = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                out.append(stmt.value)
    return out


def _section() -> str:
    """The text of architecture.md's "Where data stays open" section."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert SECTION in text, f"docs/architecture.md has no section {SECTION!r}"
    rest = text.split(SECTION, 1)[1]
    return rest.split("\n## ", 1)[0]


def test_open_dicts_stay_few() -> None:
    counts = open_dicts(PACKAGE)
    total = sum(counts.values())
    table = "\n".join(f"{n:4} {f}" for f, n in counts.most_common())
    print(f"dict[str, Any] (and aliases) in python/tandem: {total}\n{table}")
    assert total <= LIMIT, f"{total} open dicts (limit {LIMIT}):\n{table}"


def test_each_file_holding_one_is_named_in_the_architecture() -> None:
    section = _section()
    missing = [f for f in open_dicts(PACKAGE) if f"`{f}`" not in section]
    assert not missing, (f"files with dict[str, Any] not named under {SECTION!r} "
                         f"in docs/architecture.md: {missing}")


def test_the_counter_sees_an_alias(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        '"""A module; Blob in prose is no use."""\n'
        "from typing import Any, TypeAlias\n"
        "Blob = dict[str, Any]\n"
        "Blobs: TypeAlias = list[Blob]\n"
        "def f(x: Blob) -> Blobs:\n"
        "    return [x]\n"
        'def g(x: "Blob | None") -> dict[str, Any]:\n'
        "    return {}\n", encoding="utf-8")
    (tmp_path / "b.py").write_text(
        "from a import Blob as B\n"
        "import a\n"
        "from typing import Any, Dict\n"
        "def h(x: a.Blob, y: B) -> Dict[str, Any]: ...\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("Blob = 1\nprint(Blob)\n", encoding="utf-8")
    counts = open_dicts(tmp_path)
    # a.py: Blob's definition, Blobs' (a use of Blob), f's two, g's two.
    assert counts["a.py"] == 1 + 1 + 2 + 2
    assert counts["b.py"] == 3  # a.Blob, B (Blob imported as B), typing's Dict
    # Another module's own, unrelated name of the same spelling is no use of it.
    assert "c.py" not in counts
