"""Which turns the rewinds of a journal hide, once their undos are applied.

A ``rewind`` entry hides the turns that had started before it, from its
``before_turn`` on; a ``rewind_undo`` that is not ``files_only`` cancels the
rewind whose seq it names, so that rewind counts as not having happened.
The undo of an edit-and-resend (``turns/resend``) also names
``hides_from``: it then hides, as a rewind before that turn would, the
resent turn it takes back.
The projection, the listing of visible turns and the entry index by turn
(`tandem.store.turn_index`) all read rewinds through this one ledger.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def cancels(e: Mapping[str, Any]) -> int | None:
    """The seq of the rewind entry E cancels, when E is a ``rewind_undo`` that cancels one."""
    if e.get("type") != "rewind_undo" or e.get("files_only"):
        return None
    seq = e.get("rewind_seq")
    return seq if isinstance(seq, int) else None


class RewindLedger:
    """Collects rewinds and their undos in one pass; `hidden` applies the live ones."""

    __slots__ = ("order", "rewinds", "cancelled")

    def __init__(self) -> None:
        self.order: list[int] = []
        """Turns in the order their ``turn_start`` appeared."""
        self.rewinds: list[tuple[Any, int, int]] = []
        """(seq, before_turn, how many turns had started before it)."""
        self.cancelled: set[int] = set()

    def see(self, e: Mapping[str, Any], kind: Any) -> None:
        """Note E (of type KIND) when it is a rewind or an undo."""
        if kind == "rewind":
            before = e.get("before_turn")
            if isinstance(before, int):
                self.rewinds.append((e.get("seq"), before, len(self.order)))
        else:
            seq = cancels(e)
            if seq is not None:
                self.cancelled.add(seq)
                hides = e.get("hides_from")
                if isinstance(hides, int):  # undoing a resend takes the resent turn back
                    self.rewinds.append((e.get("seq"), hides, len(self.order)))

    def hidden(self) -> set[int]:
        """Turns hidden by the rewinds no undo cancelled."""
        out: set[int] = set()
        for seq, before, n in self.rewinds:
            if seq not in self.cancelled:
                out.update(t for t in self.order[:n] if t >= before)
        return out
