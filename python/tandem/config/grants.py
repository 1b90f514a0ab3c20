"""Granting and revoking trust in a project's settings, with what trust would change.

Shared by ``tandem trust`` / ``tandem untrust``, the ``settings/*`` methods
Emacs calls and ``tandem doctor``.
"""

from __future__ import annotations

from pathlib import Path

from tandem.config.agent_files import combined, digest_of, listed_files, present, read_file
from tandem.config.layers import (
    project_settings_path,
    read_layer,
    untrusted_view,
    user_settings_path,
)
from tandem.config.trust import TrustStore, canonical_root
from tandem.protocol.base import TandemError
from tandem.protocol.settings import SHOWN_CHARS, ShownFile, TrustReport


def _agent_files(root: str, user: dict[str, object]) -> list[ShownFile]:
    """ROOT's agent configuration files, each read once for its text and its digest."""
    out = []
    agents = user.get("acp_agents")
    for rel in present(root, listed_files(agents if isinstance(agents, dict) else None)):
        data = read_file(Path(root) / rel)
        text = data.decode("utf-8", errors="replace")[:SHOWN_CHARS] if isinstance(
            data, bytes) else ""
        out.append(ShownFile(path=str(Path(root) / rel), sha256=digest_of(data), text=text))
    return out


def trust_report(root: str | Path, home: Path, user_path: Path | None = None) -> TrustReport:
    """ROOT's project settings: trusted or not, and the keys trust grants (never raises)."""
    canon = canonical_root(root)
    path = project_settings_path(canon)
    out = TrustReport(root=canon, path=str(path), exists=False)
    try:
        layer = read_layer(path)
        user = read_layer(user_path or user_settings_path()).raw
        out.agent_files = _agent_files(canon, user)
        if not layer.exists and not out.agent_files:
            return out
        out.exists = True
        out.sha256 = combined(layer.sha256, {
            f.path[len(canon) + 1:]: f.sha256 for f in out.agent_files})
        if layer.exists:
            out.text = path.read_text(encoding="utf-8", errors="replace")[:SHOWN_CHARS]
            out.grants = untrusted_view(layer.raw, user)[1]
        granted = TrustStore(home).granted(canon)
        out.trusted = granted == out.sha256
        out.changed = granted is not None and not out.trusted
        unusable = [f"{f.path}: {f.sha256}" for f in out.agent_files if len(f.sha256) != 64]
        if layer.error is not None:
            out.error = layer.error.message
        elif unusable:
            out.error = f"cannot be trusted: {'; '.join(unusable)}"
    except (TandemError, OSError) as exc:
        out.error = exc.message if isinstance(exc, TandemError) else str(exc)
    return out


def grant_trust(root: str | Path, home: Path, sha256: str | None = None) -> TrustReport:
    """Trust ROOT's settings file as it is now; with SHA256, only if it still has that content.

    An invalid file cannot be trusted (``invalid-settings``); a file changed
    since it was shown is refused (``changed``).
    """
    report = trust_report(root, home)
    if not report.exists or report.sha256 is None:
        raise TandemError("not-found", f"Nothing to trust in {report.root}: no "
                          f"{report.path} and no agent configuration")
    if report.error:
        raise TandemError("invalid-settings", report.error)
    if sha256 is not None and sha256 != report.sha256:
        raise TandemError("stale", f"{report.path} changed since it was shown; look again")
    TrustStore(home).grant(report.root, report.sha256)
    report.trusted, report.changed = True, False
    return report


def revoke_trust(root: str | Path, home: Path) -> bool:
    """Forget the grant of ROOT; True when there was one."""
    return TrustStore(home).revoke(canonical_root(root))


def describe(report: TrustReport) -> str:
    """A few lines for a terminal: the file, its state, the keys trust grants."""
    if not report.exists:
        return f"{report.path}: no project settings, and no agent configuration"
    state = ("trusted" if report.trusted else
             "changed since trusted: not trusted" if report.changed else "not trusted")
    grants = ", ".join(report.grants) or "nothing beyond what applies anyway"
    where = report.path if report.text or report.grants or report.error else report.root
    lines = [f"{where}: {state}", f"  trust grants: {grants}"]
    if report.agent_files:
        lines.append("  and the agents' own configuration: "
                     + ", ".join(f.path for f in report.agent_files))
    if report.error:
        lines.append(f"  invalid: {report.error}")
    return "\n".join(lines)
