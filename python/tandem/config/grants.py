"""Granting and revoking trust in a project's settings, with what trust would change.

Shared by ``tandem trust`` / ``tandem untrust``, the ``settings/*`` methods
Emacs calls and ``tandem doctor``. A report reads each covered file once:
its text, its digest, the keys trust grants and the restricted values all
come from those bytes (never from the parse cache), and a grant is given
only for the digest of a report.
"""

from __future__ import annotations

import json
from pathlib import Path

from tandem.config.layers import (
    FileLayer,
    parse_layer,
    read_layer,
    restricted_values,
    untrusted_view,
    user_settings_path,
)
from tandem.config.shown import PROJECT_SETTINGS, Shown, covered_files, read_shown
from tandem.config.trust import TrustStore, canonical_root, combined_digest
from tandem.protocol.base import TandemError
from tandem.protocol.settings import RestrictedValue, ShownFile, TrustReport


def trust_report(root: str | Path, home: Path, user_path: Path | None = None) -> TrustReport:
    """ROOT's covered files, each read once: trusted or not, what trust grants (never raises)."""
    canon = canonical_root(root)
    out = TrustReport(root=canon, path=str(Path(canon) / PROJECT_SETTINGS), exists=False)
    try:
        user = read_layer(user_path or user_settings_path()).raw
        read = [read_shown(canon, rel) for rel in covered_files(canon, user)]
        # The settings file always (present or not); an agent file when it is there.
        out.files = [_file(f) for f in read if f.rel == PROJECT_SETTINGS or f.counted]
        present = [(f.rel, sha) for f in read if (sha := f.counted) is not None]
        out.exists = bool(present)
        if not out.exists:
            return out
        out.sha256 = combined_digest(present)
        errors = [f.error for f in read if f.error]
        settings = next(f for f in read if f.rel == PROJECT_SETTINGS)
        if settings.data is not None and not settings.error:
            layer = parse_layer(settings.path, settings.data)
            _restricted(out, layer, user)
            if layer.error is not None:
                errors.insert(0, layer.error.message)
        out.error = errors[0] if errors else None
        granted = TrustStore(home).granted(canon)
        out.trusted = granted == out.sha256 and out.error is None
        out.changed = granted is not None and granted != out.sha256
    except TandemError as exc:
        out.error = exc.message
    return out


def _file(f: Shown) -> ShownFile:
    return ShownFile(rel=f.rel, path=str(f.path), exists=f.data is not None, size=f.size,
                     sha256=f.sha256, text=f.text, error=f.error)


def _restricted(out: TrustReport, layer: FileLayer, user: dict[str, object]) -> None:
    """Fill OUT's grants and restricted values from LAYER (the bytes the report shows)."""
    out.grants = untrusted_view(layer.raw, user)[1]
    for key, value in restricted_values(layer.raw):
        needs = any(g == key or g.startswith(key + " ") for g in out.grants)
        out.restricted.append(RestrictedValue(
            key=key, file=PROJECT_SETTINGS, needs_trust=needs,
            value=json.dumps(value, indent=2, ensure_ascii=True)))


def grant_trust(root: str | Path, home: Path, sha256: str | None = None,
                user_path: Path | None = None) -> TrustReport:
    """Trust ROOT's files as one report reads them; with SHA256, only if that is their digest.

    A file that cannot be shown whole or does not validate cannot be trusted
    (``invalid-settings``); files changed since SHA256 was shown are refused
    (``stale``). The grant is for the digest of the report returned.
    """
    report = trust_report(root, home, user_path)
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


def describe(report: TrustReport, whole: bool = False) -> str:
    """Lines for a terminal: the file, its state, the keys trust grants, the restricted values.

    WHOLE adds every file's text, control characters made visible (a
    carriage return must not let a later line cover an earlier one).
    """
    if not report.exists:
        return f"{report.path}: no project settings, and no agent configuration"
    state = ("trusted" if report.trusted else
             "changed since trusted: not trusted" if report.changed else "not trusted")
    grants = ", ".join(report.grants) or "nothing beyond what applies anyway"
    settings = any(f.exists for f in report.files if f.rel == PROJECT_SETTINGS)
    lines = [f"{report.path if settings else report.root}: {state}", f"  trust grants: {grants}"]
    agents = [f.path for f in report.files if f.exists and f.rel != PROJECT_SETTINGS]
    if agents:
        lines.append("  and the agents' own configuration: " + ", ".join(agents))
    if report.error:
        lines.append(f"  cannot be trusted: {report.error}")
    for r in report.restricted:
        note = "needs trust" if r.needs_trust else "applies anyway"
        lines.append(f"  {r.key} ({note}, {r.file}) = " + r.value.replace("\n", "\n    "))
    if whole:
        for f in report.files:
            if f.exists:
                lines += [f"--- {f.rel} ({f.size} bytes) ---", _visible(f.text)]
    if report.sha256:
        lines.append(f"  sha256: {report.sha256} (trust lapses when a file changes)")
    return "\n".join(lines)


def _visible(text: str) -> str:
    return "".join(c if c in "\n\t" or (c.isprintable() and c != "\x7f") else
                   f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in text)
