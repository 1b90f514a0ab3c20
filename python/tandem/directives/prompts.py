"""Prompt builders: pure functions of the workspace record and freshly read sources.

A directive prompt never includes the root chat. It holds the directive's
request, its anchor and references as they are on disk now, and, by
action, its own local history:

* discuss: the complete local discussion so far, then the question;
* implement: nothing more (optional guidance);
* implement-this: the complete local discussion;
* discuss-result: the selected attempt only (answer, outcome, patch) and
  the discussion turns attached to it, then the question;
* request-changes: the preceding successful attempt's answer and patch,
  labelled historical, then the feedback;
* retry: the preceding attempt's error, answer and partial changes, then
  optional guidance.

Golden tests in ``tests/python/directives/golden/`` pin the output.
"""

from __future__ import annotations

from collections.abc import Sequence

from tandem.directives.models import Attempt, DirectiveState, Discussion
from tandem.mentions.sources import Source, fence
from tandem.protocol.checkpoints import PatchSummary

MAX_DIFF_CHARS = 60_000

TASKS: dict[str, str] = {
    "discuss": ("Discuss this directive with the user: answer the question, explain, point out "
                "risks, propose a plan. This is a read-only discussion: do not modify files "
                "or run commands."),
    "implement": "Implement the request in the workspace. Change only what the request needs.",
    "implement-this": ("Implement the request in the workspace, as agreed in the discussion "
                       "above. Change only what the request needs."),
    "discuss-result": ("Discuss the attempt above with the user: answer the question about it. "
                       "This is a read-only discussion: do not modify files or run commands."),
    "request-changes": ("The attempt above is applied in the workspace now. Change it as the "
                        "feedback below says."),
    "retry": ("The attempt above did not succeed; whatever partial changes it made are still "
              "in the workspace. Try again and complete the request."),
}

TEXT_HEADINGS: dict[str, str] = {
    "discuss": "Question",
    "implement": "Guidance",
    "implement-this": "Guidance",
    "discuss-result": "Question",
    "request-changes": "Feedback",
    "retry": "Guidance",
}


def _source(heading: str, src: Source) -> str:
    note = ""
    if src.missing:
        note = (" (source missing: the text recorded when the directive was made)"
                if src.text else " (source missing)")
    if src.truncated:
        note += " (truncated)"
    out = f"{heading}{src.label()}{note}\n"
    return out + (fence(src.text) if src.text or not src.missing else "")


def _discussion(turns: Sequence[Discussion]) -> str:
    parts = []
    for t in turns:
        about = f" about attempt {t.attempt}" if t.attempt is not None else ""
        question = t.text.strip() or "(no question: discuss the request)"
        answer = t.answer.strip() if t.outcome == "succeeded" else (
            f"({t.outcome}: {t.error or 'no answer'})"
            + (f"\n{t.answer.strip()}" if t.answer.strip() else ""))
        parts.append(f"### User (discussion {t.seq}{about})\n{question}\n\n"
                     f"### Assistant\n{answer or '(no answer)'}")
    return "\n\n".join(parts)


def _attempt(a: Attempt, label: str, request: str) -> str:
    lines = [f"## Attempt {a.seq} ({label})",
             f"Action: {a.action}. Outcome: {a.outcome}."]
    if a.request.strip() and a.request.strip() != request.strip():
        lines.append(f"The request at the time:\n{a.request.strip()}")
    if a.text.strip():
        lines.append(f"{TEXT_HEADINGS.get(a.action, 'Text')} given with it:\n{a.text.strip()}")
    if a.error:
        lines.append(f"Error: {a.error}")
    lines.append("### Answer\n" + (a.answer.strip() or "(no answer)"))
    diff = a.diff
    cut = ""
    if len(diff) > MAX_DIFF_CHARS:
        diff, cut = diff[:MAX_DIFF_CHARS], " (truncated)"
    if diff.strip():
        lines.append(f"### Patch{cut}\n" + fence(diff, "diff"))
    else:
        patch = PatchSummary.read(a.patch)
        files = patch.paths() if patch is not None else []
        lines.append("### Patch\n" + ("(no diff recorded; files: " + ", ".join(files) + ")"
                                       if files else "(no changes)"))
    if a.completeness == "incomplete":
        lines.append(f"Capture completeness: {a.completeness}.")
    return "\n\n".join(lines)


def build_prompt(state: DirectiveState, action: str, text: str, anchor: Source,
                 references: Sequence[Source], attempt: Attempt | None = None,
                 instructions: str = "") -> str:
    """The exact prompt of ACTION on STATE with user TEXT and the chosen ATTEMPT.

    ANCHOR and REFERENCES are the sources as read from disk now; INSTRUCTIONS
    the project's instruction files as text (`tandem.config.agent_files`).
    """
    if action not in TASKS:
        raise ValueError(f"unknown action {action!r}")
    parts = [f"# Directive {state.id}", "## Request\n" + state.request.strip(),
             _source("## Anchor: ", anchor)]
    if references:
        parts.append("## References\n\n" + "\n\n".join(_source("### ", r) for r in references))
    if instructions:
        parts.append("## Project instructions\n\n" + instructions)
    if action in ("discuss", "implement-this") and state.discussion:
        parts.append("## Discussion so far\n\n" + _discussion(state.discussion))
    if action == "discuss-result":
        if attempt is None:
            raise ValueError("discuss-result needs an attempt")
        parts.append(_attempt(attempt, "the result under discussion", state.request))
        attached = [t for t in state.discussion if t.attempt == attempt.seq]
        if attached:
            parts.append("## Discussion of this attempt so far\n\n" + _discussion(attached))
    elif action in ("request-changes", "retry"):
        if attempt is None:
            raise ValueError(f"{action} needs the preceding attempt")
        parts.append(_attempt(attempt, "historical: the preceding attempt, for reference",
                              state.request))
    parts.append("## Your task\n" + TASKS[action])
    if text.strip():
        parts.append(f"## {TEXT_HEADINGS[action]}\n{text.strip()}")
    return "\n\n".join(parts) + "\n"
