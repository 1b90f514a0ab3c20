"""Rewind: go back before a turn of a session, undo that, and edit-and-resend.

One feature package, above the turn engine and below the app and its
adapters (see docs/checkpoints.md). Its modules, in import order (none
imports one listed after it at run time):

* `tandem.rewind.plan` — the facts of the discarded turns, the plan pure
  over facts already read (`plan_from`), and `build_plan`, which reads git;
* `tandem.rewind.undo_plan` — which rewind an undo concerns and its plan;
* `tandem.rewind.recovery` — the intent file and the settling of a rewind
  a crash interrupted;
* `tandem.rewind.restore_back` — putting files back after a failed step;
* `tandem.rewind.remote` — a remote session's files and pending pushes;
* `tandem.rewind.undo` — undoing the latest rewind (`RewindUndo`);
* `tandem.rewind.service` — `RewindService`, the orchestration;
* `tandem.rewind.resend` — edit and resend: a rewind, then a new turn.

The ledger of which turns rewinds hide stays in `tandem.store.rewinds`: the
journal's readers (the turn index, the projection) sit below this package.
The restore itself is `tandem.checkpoints`, below it.
"""
