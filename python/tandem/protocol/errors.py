"""Every error code of the protocol, each with what it means and what to do.

`CODES` is the one enumeration: `ErrorCode` (a ``Literal``) is checked by
mypy at every ``TandemError("…", …)`` and by `TandemError` at run time;
docs/protocol.md and elisp/tandem-errors.el are generated from it. Codes
Emacs signals on its own (a timeout, a dead backend) are in `CLIENT_CODES`.

Messages carry no key bindings: an error that wants the user to run an
Emacs command names it in ``command`` (one of `COMMANDS`); Emacs renders
its key with ``substitute-command-keys``, the CLI in its own words.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

ErrorCode = Literal[
    "ambiguous",
    "auth",
    "busy",
    "cancelled",
    "checkpoint-failed",
    "closed",
    "compaction",
    "conflict",
    "corrupt",
    "exists",
    "host-mismatch",
    "internal",
    "invalid",
    "invalid-settings",
    "later-turns",
    "mcp-failed",
    "io",
    "move-failed",
    "needs-terminal",
    "no-checkpoint",
    "no-credentials",
    "no-provider",
    "no-such-method",
    "not-found",
    "nothing-to-compact",
    "provider",
    "read-only",
    "remote-busy",
    "remote-failed",
    "remote-gone",
    "remote-invalid",
    "remote-refused",
    "remote-unreachable",
    "restore-failed",
    "settings-save-failed",
    "stale",
    "unauthorized",
    "unavailable",
    "unsupported",
]
"""A code the backend may put in an error reply."""

CODES: dict[ErrorCode, str] = {
    "ambiguous": "What was named matches more than one thing (a session id prefix, an "
    "anchor's text); give more of it, or point at the one you mean.",
    "auth": "The connection did not open with `hello` and the backend's token, so it "
    "was closed; start the backend again from the Emacs that owns it.",
    "busy": "A running turn, compaction or rewind holds the session; wait for it to "
    "end, or cancel it.",
    "cancelled": "The operation was cancelled before it changed anything; run it again "
    "when you want it.",
    "checkpoint-failed": "A checkpoint could not be captured or read (git failed, an "
    "object is missing); the message says what failed.",
    "closed": "The agent process was closed while the request was on its way; send "
    "the request again to start a new one.",
    "compaction": "A compaction summarised the turns this rewind would discard; "
    "rewind to a turn the message names instead.",
    "conflict": "The workspace changed between planning a restore and carrying it "
    "out; nothing was restored; plan it again.",
    "corrupt": "A file tandem keeps (a journal header, a remote target) is damaged; "
    "the message names it and what to do with it.",
    "exists": "The destination already exists, so nothing was moved; move it away or "
    "choose another destination.",
    "host-mismatch": "A key would go to a host other than the one it was configured "
    "for; nothing was sent. The message names the setting that chose the URL.",
    "internal": "A handler failed unexpectedly (a bug); the backend lives on and its "
    "log has the traceback; please report it.",
    "invalid": "The request was malformed or a value was wrong; the message names "
    "each field and what was expected.",
    "invalid-settings": "A settings.json cannot be read or does not hold a JSON "
    "object; fix the file the message names.",
    "io": "Reading or writing a file of tandem's state failed and nothing was "
    "recorded; the message names the file and the reason.",
    "later-turns": "A turn ran after the rewind, so undoing it would mix the rewound "
    "turns with it; restore only the files (files_only), or leave the rewind.",
    "mcp-failed": "An MCP server could not be started or answered wrongly; the "
    "message names the server and its last words; its log holds more.",
    "move-failed": "Moving (re-rooting) a session failed; the message says whether "
    "everything was put back.",
    "needs-terminal": "Going on needs your consent and there was no one to ask; run "
    "the same command interactively.",
    "no-checkpoint": "The turn recorded no checkpoint, or its checkpoint is not in the "
    "store, so its files cannot be shown or restored.",
    "no-credentials": "There is no API key for the provider; set its environment "
    "variable or add it to auth-source.",
    "no-provider": "No provider was chosen; pass one (FAMILY:MODEL for an API family "
    "`tandem doctor` lists, or acp:AGENT) or set default_provider in settings.json.",
    "no-such-method": "The backend has no such method: Emacs and the backend are "
    "different versions; restart the backend from this checkout.",
    "not-found": "Nothing has that id or name (a session, turn, directive, checkpoint, "
    "page); list them to find the right one.",
    "nothing-to-compact": "The session has too little history to compact; compact it "
    "after more turns.",
    "provider": "The model provider or agent failed or gave an unusable answer, and "
    "nothing was changed; try again or choose another provider.",
    "read-only": "The session cannot be written (another process holds it, or its "
    "journal cannot take more); the message says why.",
    "remote-busy": "The agent-server is at capacity (HTTP 429: too many conversations "
    "running); try again when one has finished, or raise its max_concurrent_runs.",
    "remote-gone": "The remote conversation no longer exists on the agent-server (it "
    "restarted without its state, or the conversation was deleted); send again to "
    "start a new one.",
    "remote-failed": "The agent-server failed on its side (HTTP 5xx); try again later "
    "or read its log.",
    "remote-invalid": "The agent-server answered with something tandem cannot use; "
    "check that it is a compatible version.",
    "remote-refused": "The agent-server refused the request (HTTP 4xx); its own words "
    "are in the message.",
    "remote-unreachable": "The agent-server did not answer (refused, timed out, "
    "reset); check its URL and that it is running.",
    "restore-failed": "Putting files back from a checkpoint failed; the message says "
    "whether the rollback restored the workspace.",
    "settings-save-failed": "The settings file could not be written; the message "
    "names it and the reason, and the change is not saved.",
    "stale": "The session or the workspace changed since the plan was made, so "
    "nothing was done; look at the new plan and confirm again.",
    "unauthorized": "The agent-server refused the session API key (HTTP 401); check "
    "the key kept for it in auth-source.",
    "unavailable": "Something needed is missing (git for checkpoints, a directive's "
    "session whose journal is gone); the message says what.",
    "unsupported": "The agent does not offer that choice (a mode or model it did not "
    "list); the message names what it offers.",
}
"""Each backend code with one sentence: what it means and what the user can do."""

CLIENT_CODES: dict[str, str] = {
    "backend-died": "The backend process exited; the message ends with its last words, "
    "and the next request starts a new backend.",
    "protocol": "A frame from the backend was not a reply Emacs can read (a bug); "
    "restart the backend.",
    "remote": "The backend answered with an error that is not a tandem error plist "
    "(a bug); the message holds what came.",
    "start-failed": "The backend did not announce its port; the message has its "
    "output; check `tandem-python`.",
    "timeout": "No reply came in time; the backend may still be working; raise "
    "`tandem-request-timeout` for slow calls.",
    "too-large": "The request would not fit in one frame (16 MiB); send less at once.",
}
"""Codes Emacs signals itself (never on the wire), with their sentences."""

Command = Literal[
    "tandem-cancel-turn",
    "tandem-compact-cancel",
    "tandem-directive-rebind",
    "tandem-resume",
]
"""An Emacs command an error may name as the way out."""

COMMANDS: tuple[Command, ...] = get_args(Command)
"""Every `Command`, for the run-time check and the generated elisp."""


class TandemError(Exception):
    """An error a handler raises on purpose: it reaches Emacs as ``tandem-CODE``.

    CODE is one of `CODES` (anything else is a programming error: ValueError);
    MESSAGE is for the user and names no key; DATA is optional detail;
    COMMAND, if given, is the Emacs command that is the way out.
    """

    def __init__(self, code: ErrorCode, message: str, data: Any = None,
                 command: Command | None = None) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}: add it to tandem.protocol.errors")
        if command is not None and command not in COMMANDS:
            raise ValueError(f"unknown command {command!r}: add it to tandem.protocol.errors")
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.data = data
        self.command = command


def shell_text(err: TandemError) -> str:
    """ERR's message for a shell user: the Emacs command, if any, said as such."""
    if err.command is None:
        return err.message
    return f"{err.message} (in Emacs: M-x {err.command})"
