"""Golden tests of the prompt builders: each action's exact prompt is pinned.

Regenerate after an intended change with ``TANDEM_REGEN_GOLDEN=1 pytest …``
and review the diff of ``tests/python/directives/golden/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tandem.config.agent_files import instructions_text, project_instructions
from tandem.directives.models import Attempt, DirectiveState, Discussion
from tandem.directives.prompts import build_prompt, fence
from tandem.mentions.sources import Source, resolve_anchor, resolve_reference
from tandem.protocol.checkpoints import FileChange, PatchSummary
from tandem.protocol.directives import Anchor, Reference

GOLDEN = Path(__file__).with_name("golden")
# An attempt's patch as a turn's end records it (a `PatchSummary`): src/app.py modified.
PATCH = PatchSummary(from_id="1" * 40, to_id="2" * 40, from_tree="3" * 40, to_tree="4" * 40,
                     files=[FileChange(path="src/app.py", status="modified")],
                     completeness="captured").recorded()

ATTEMPT1 = Attempt(seq=1, action="implement-this", request="Make greet() return a louder hi",
                   prompt="(attempt 1 prompt)", answer="I changed greet() to return 'HI'.",
                   outcome="succeeded", session="s", turn=2,
                   diff="--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n def greet():\n"
                        "-    return 'hi'\n+    return 'HI'\n",
                   patch=PATCH,
                   completeness="captured")
ATTEMPT2 = Attempt(seq=2, action="request-changes", request="Make greet() return a louder hi",
                   text="Use an exclamation mark too", prompt="(attempt 2 prompt)",
                   answer="Partial: edit failed.", error="The model stopped: 500 upstream",
                   outcome="failed", session="s", turn=4, diff="", completeness="incomplete",
                   patch=PATCH)


def _state(**kw: object) -> DirectiveState:
    base: dict[str, object] = {
        "id": "D3", "request": "Make greet() return a louder hi",
        "anchor": Anchor(path="src/app.py", start_line=1, end_line=2,
                         text="def greet():\n    return 'hi'\n"),
        "references": [Reference(path="notes.md")],
        "discussion": [
            Discussion(seq=1, action="discuss", request="r", text="Should it be all caps?",
                       prompt="p", answer="Yes, all caps reads as loud.", outcome="succeeded",
                       session="s", turn=1),
            Discussion(seq=2, action="discuss-result", request="r", text="Is ```HI``` right?",
                       prompt="p", answer="It is.", outcome="succeeded", attempt=1,
                       session="s", turn=3),
        ],
        "attempts": [ATTEMPT1, ATTEMPT2],
    }
    base.update(kw)
    return DirectiveState.model_validate(base)


CASES = {
    "discuss": (_state(discussion=[], attempts=[]), "What does loud mean here?", None),
    "discuss_continued": (_state(attempts=[]), "And the tests?", None),
    "implement": (_state(discussion=[], attempts=[]), "", None),
    "implement-this": (_state(attempts=[]), "Keep it short", None),
    "discuss-result": (_state(), "Why caps?", ATTEMPT1),
    "request-changes": (_state(attempts=[ATTEMPT1]), "Add an exclamation mark", ATTEMPT1),
    "retry": (_state(), "", ATTEMPT2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, project: Path) -> None:
    state, text, attempt = CASES[case]
    action = "discuss" if case == "discuss_continued" else case
    anchor = resolve_anchor(project, state.anchor)
    refs = [resolve_reference(project, r) for r in state.references]
    got = build_prompt(state, action, text, anchor, refs, attempt)
    path = GOLDEN / f"{case}.txt"
    if os.environ.get("TANDEM_REGEN_GOLDEN"):
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")


def test_prompt_is_pure_and_reads_sources_fresh(project: Path) -> None:
    state = _state(discussion=[], attempts=[])
    a = resolve_anchor(project, state.anchor)
    assert build_prompt(state, "implement", "", a, []) == build_prompt(state, "implement", "",
                                                                       a, [])
    # The region moved down two lines: the unique anchor text is found where it is now.
    (project / "src" / "app.py").write_text("import os\n\ndef greet():\n    return 'hi'\n")
    moved = resolve_anchor(project, state.anchor)
    assert (moved.start_line, moved.end_line) == (3, 4) and "return 'hi'" in moved.text
    # The source is gone: the recorded text, said to be so.
    (project / "src" / "app.py").unlink()
    gone = resolve_anchor(project, state.anchor)
    assert gone.missing and gone.text == state.anchor.text
    assert "source missing" in build_prompt(state, "implement", "", gone, [])
    missing_ref = resolve_reference(project, Reference(path="nope.md"))
    assert missing_ref.missing and "nope.md (source missing)" in build_prompt(
        state, "implement", "", gone, [missing_ref])
    # A reference outside the root is never read.
    assert resolve_reference(project, Reference.model_construct(path="../x")).missing


def test_fence_outgrows_backticks() -> None:
    assert fence("a ``` b") == "````\na ``` b\n````"
    assert fence("") == "```\n```"


def test_builder_refuses_missing_inputs() -> None:
    state = _state()
    src = Source("a", 1, 1, "x")
    for action in ("discuss-result", "request-changes", "retry"):
        with pytest.raises(ValueError):
            build_prompt(state, action, "", src, [], None)
    with pytest.raises(ValueError):
        build_prompt(state, "explode", "", src, [])


def test_golden_with_project_instructions(project: Path) -> None:
    """The project's instruction files follow the references, marked as such."""
    (project / "AGENTS.md").write_text("Run the tests with make check.\n")
    state = _state(discussion=[], attempts=[])
    anchor = resolve_anchor(project, state.anchor)
    refs = [resolve_reference(project, r) for r in state.references]
    found = project_instructions(project, ("AGENTS.md", "CLAUDE.md"), 64 * 1024)
    got = build_prompt(state, "implement", "", anchor, refs, None,
                       instructions=instructions_text(found))
    path = GOLDEN / "implement_instructions.txt"
    if os.environ.get("TANDEM_REGEN_GOLDEN"):
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")
    # Without instruction files the prompt is the plain one, byte for byte.
    assert build_prompt(state, "implement", "", anchor, refs, None, instructions="") == (
        GOLDEN / "implement.txt").read_text(encoding="utf-8")
