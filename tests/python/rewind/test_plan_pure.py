"""The rewind plans' pure steps over hand-made facts: no git, no journal.

`build_plan` is `turn_facts` (the journal), `read_git` (the checkpoint
store) and `plan_from`; `build_undo_plan` likewise ends in `undo_plan_from`.
Here those get facts no store could give (a root that does not exist, ids
no git knows) and must still compute the plan from them alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tandem.protocol.checkpoints import FileChange, PatchSummary, RestoreGap, RestorePlan
from tandem.protocol.sessions import DiscardedTurn, KnownGap
from tandem.rewind.plan import GitFacts, TurnFacts, plan_from, turn_facts
from tandem.rewind.undo_plan import UndoFacts, UndoGitFacts, undo_plan_from

CP = "c" * 40
END1, START2, END2 = "1" * 40, "2" * 40, "3" * 40


def _facts() -> TurnFacts:
    return TurnFacts(
        before_turn=1, checkpoint=CP, latest=2, expected_after=END2,
        turns=[DiscardedTurn(turn=1, origin="chat", request="one", outcome="succeeded",
                             provider="openai:m", files=["a.txt"]),
               DiscardedTurn(turn=2, origin="chat", request="two", outcome="succeeded",
                             provider="openai:m", files=["b.txt"])],
        gaps=[KnownGap(kind="no-patch", turn=2, detail="turn 2 recorded no patch")],
        spans=[(1, 2, END1, START2)])


def _git(expected: str | None = END2, changed_between: list[str] | None = None) -> GitFacts:
    restore = RestorePlan(
        checkpoint_id=CP, current_tree="t" * 40, to_restore=["a.txt"], to_delete=["b.txt"],
        changed_externally=["a.txt"],
        gaps=[RestoreGap(path="big.bin", kind="gap-at-checkpoint", detail="over the cap")],
        diff="--- a/a.txt\n", diff_truncated=False)
    between = changed_between if changed_between is not None else ["b.txt", "elsewhere.txt"]
    return GitFacts(root="/nowhere/project", expected_after=expected, restore=restore,
                    between=[(1, 2, between)])


def test_the_plan_comes_from_the_facts_alone() -> None:
    plan = plan_from("S1", 7, _facts(), _git())
    assert (plan.session, plan.before_turn, plan.root, plan.checkpoint) == (
        "S1", 1, "/nowhere/project", CP)
    assert (plan.expected_after, plan.current_tree, plan.journal_seq) == (END2, "t" * 40, 7)
    assert (plan.to_restore, plan.to_delete) == (["a.txt"], ["b.txt"])
    # Changed since the last turn, then between turns, but only what the rewind touches.
    assert [(c.path, c.when) for c in plan.changed_externally] == [
        ("a.txt", "since turn 2 ended"), ("b.txt", "between turns 1 and 2")]
    # The restore's gaps first (with no turn), then the journal's.
    assert [(g.kind, g.path, g.turn) for g in plan.gaps] == [
        ("gap-at-checkpoint", "big.bin", None), ("no-patch", None, 2)]
    assert [t.turn for t in plan.turns] == [1, 2]
    assert plan.diff == "--- a/a.txt\n" and len(plan.digest) == 64


def test_the_digest_is_a_function_of_what_the_user_confirms() -> None:
    plan = plan_from("S1", 7, _facts(), _git())
    assert plan_from("S1", 7, _facts(), _git()).digest == plan.digest
    assert plan_from("S1", 8, _facts(), _git()).digest != plan.digest  # the journal moved
    assert plan_from("S1", 7, _facts(), _git(expected=None)).digest != plan.digest
    assert plan_from("S1", 7, _facts(), _git(changed_between=[])).digest != plan.digest
    # The diff is shown, not confirmed: it leaves the digest alone.
    git = _git()
    other_diff = replace(git, restore=git.restore.model_copy(update={"diff": "something else"}))
    assert plan_from("S1", 7, _facts(), other_diff).digest == plan.digest


def _patch(start: str, end: str, path: str) -> dict[str, Any]:
    """A turn_end's patch as the engine records it (a `PatchSummary`), changing PATH."""
    return PatchSummary(from_id=start, to_id=end, from_tree="f" * 40, to_tree="e" * 40,
                        files=[FileChange(path=path, status="modified")],
                        completeness="captured").recorded()


def test_the_facts_come_from_hand_made_entries() -> None:
    entries = [
        {"type": "turn_start", "turn": 1, "origin": "chat", "provider": "openai:m",
         "checkpoint": CP},
        {"type": "user", "turn": 1, "text": "first line\nsecond"},
        {"type": "turn_end", "turn": 1, "outcome": "succeeded",
         "patch": _patch(CP, END1, "a.txt")},
        {"type": "turn_start", "turn": 2, "origin": "chat", "provider": "openai:m",
         "checkpoint": START2},
        {"type": "turn_end", "turn": 2, "outcome": "succeeded",
         "patch": _patch(START2, END2, "b.txt")},
    ]
    facts = turn_facts(entries, 1)
    assert (facts.checkpoint, facts.latest, facts.expected_after) == (CP, 2, END2)
    assert facts.spans == [(1, 2, END1, START2)]  # turn 1 ended on a state turn 2 did not start on
    assert [(t.turn, t.request, t.files) for t in facts.turns] == [
        (1, "first line", ["a.txt"]), (2, "", ["b.txt"])]
    assert facts.gaps == []


def _undo_facts(end_state: str | None = None) -> UndoFacts:
    rewind = {"type": "rewind", "seq": 9, "before_turn": 1, "checkpoint": CP, "backup": END2}
    return UndoFacts(
        rewind=rewind,
        returning=[DiscardedTurn(turn=1, origin="chat", request="one", provider="openai:m")],
        attempts=[], later_turns=[3], refusal="turn(s) 3 ran after the rewind", acp_reset=True,
        takes_back=[], end_state=end_state)


def _undo_git(left_in_store: bool = True) -> UndoGitFacts:
    restore = RestorePlan(checkpoint_id=END2, current_tree="t" * 40, to_restore=["a.txt"],
                          changed_externally=["a.txt"])
    return UndoGitFacts(root="/nowhere/project", left_in_store=left_in_store, restore=restore)


def test_the_undo_plan_comes_from_the_facts_alone() -> None:
    plan = undo_plan_from("S1", 12, False, _undo_facts(), _undo_git())
    assert (plan.rewind_seq, plan.before_turn, plan.root, plan.checkpoint) == (
        9, 1, "/nowhere/project", END2)
    assert (plan.expected_after, plan.journal_seq, plan.gaps) == (CP, 12, [])
    assert [(c.path, c.when) for c in plan.changed_externally] == [("a.txt", "since the rewind")]
    assert [t.turn for t in plan.turns] == [1] and plan.acp_reset
    assert plan.refusal == "turn(s) 3 ran after the rewind" and plan.later_turns == [3]
    # Files only: no turn returns, no refusal, no reset; a resend's end is what tandem left.
    files = undo_plan_from("S1", 12, True, _undo_facts(end_state=END1), _undo_git(False))
    assert (files.turns, files.refusal, files.acp_reset) == ([], None, False)
    assert files.expected_after == END1
    assert [g.kind for g in files.gaps] == ["no-end-state"]
    assert files.digest != plan.digest
    assert undo_plan_from("S1", 12, False, _undo_facts(), _undo_git()).digest == plan.digest
