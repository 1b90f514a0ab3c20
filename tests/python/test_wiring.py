"""Services are constructed, never patched: collaborators arrive through constructors.

A program can check the shape of it: the composition root (`app.py`) assigns no
attribute of anything but itself, and no service module reaches through one of
its attributes to assign another object's (``self.sessions.front_end = …``).
The engine reads sessions through one typed `SessionFacts`, not loose callables.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from tandem.turns.engine import TurnEngine

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "tandem"


def _assignments(path: Path) -> list[tuple[int, ast.Attribute]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        out += [(node.lineno, t) for t in targets if isinstance(t, ast.Attribute)]
    return out


def _services() -> list[Path]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        if any(isinstance(n, ast.ClassDef) and n.name.endswith("Service") for n in tree.body):
            found.append(path)
    return found


def test_the_composition_root_assigns_only_its_own_attributes() -> None:
    app = PACKAGE / "app.py"
    bad = [f"app.py:{line}: {ast.unparse(t)}" for line, t in _assignments(app)
           if not (isinstance(t.value, ast.Name) and t.value.id == "self")]
    assert bad == [], "wire through constructors instead:\n" + "\n".join(bad)


def test_no_service_assigns_an_attribute_of_another() -> None:
    services = _services()
    assert len(services) >= 6, services  # the finder still finds them
    bad = []
    for path in services:
        for line, target in _assignments(path):
            base = target.value
            # self.<collaborator>.<attr> = …: another object's state, patched.
            if (isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name)
                    and base.value.id == "self"):
                bad.append(f"{path.relative_to(PACKAGE)}:{line}: {ast.unparse(target)}")
    assert bad == [], "give it to the collaborator's constructor instead:\n" + "\n".join(bad)


def test_the_engine_takes_one_typed_facts_collaborator() -> None:
    params = inspect.signature(TurnEngine.__init__).parameters
    callables = [name for name, p in params.items() if "Callable" in str(p.annotation)]
    # The journal and provider lookups are the engine's own inputs; session facts are one.
    assert "facts" in params and str(params["facts"].annotation) == "SessionFacts | None"
    assert set(callables) == {"journal_of", "provider_for", "after_end"}, callables
