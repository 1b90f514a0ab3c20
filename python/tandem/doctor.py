"""``tandem doctor``: what tandem found on this machine and what is missing.

It never prints a key: for each provider it says only whether one is set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata

from pydantic import BaseModel

from tandem import secrets
from tandem.paths import tandem_home
from tandem.providers import families
from tandem.store import fsutil
from tandem.store.home import prepare_home

PACKAGES = ("epc", "sexpdata", "pydantic", "anyio", "httpx", "httpx-sse", "agent-client-protocol")
ACP_COMMANDS = ("claude-agent-acp", "claude-code-acp", "codex-acp", "gemini")


class Check(BaseModel):
    """One line of the report."""

    name: str
    ok: bool
    detail: str
    required: bool = True
    too_open: bool = False
    """Not missing: present, but group or others may use it (``tandem doctor --fix``)."""


def _package(name: str) -> Check:
    try:
        return Check(name=f"python package {name}", ok=True, detail=metadata.version(name))
    except metadata.PackageNotFoundError:
        return Check(name=f"python package {name}", ok=False, detail="not installed")


def _emacs() -> list[Check]:
    emacs = shutil.which("emacs")
    if not emacs:
        return [Check(name="emacs", ok=False, detail="not on PATH (apt-get install emacs-nox)")]
    out = subprocess.run(
        [emacs, "--batch", "--no-init-file", "--eval",
         "(progn (princ emacs-version) (princ \" \")"
         " (princ (if (locate-library \"epc\") \"epc\" \"-\")))"],
        capture_output=True, text=True, timeout=30,
    )
    version, _, epc = out.stdout.strip().partition(" ")
    return [
        Check(name="emacs", ok=out.returncode == 0, detail=f"{version} at {emacs}"),
        Check(name="epc.el (benchmark anchor only)", ok=epc == "epc", required=False,
              detail="found" if epc == "epc" else "missing (apt-get install elpa-epc)"),
    ]


def _state_dir() -> Check:
    home = tandem_home()
    try:
        fsutil.private_dir(home)
        with tempfile.NamedTemporaryFile(dir=home):
            pass
        return Check(name="state directory", ok=True, detail=f"{home} (writable)")
    except OSError as e:
        return Check(name="state directory", ok=False, detail=f"{home}: {e.strerror}")


LOOSE_SHOWN = 20
"""Most loose entries the private-state check names."""


def _private_modes() -> Check:
    """Whether everything under the state directory is private (no group or other bits)."""
    home = tandem_home()
    if not home.is_dir():
        return Check(name="private state", ok=True, detail=f"{home} does not exist yet")
    loose, complete = fsutil.loose_entries(home)
    bound = "" if complete else f" (first {fsutil.WALK_LIMIT} entries checked)"
    if not loose:
        return Check(name="private state", ok=True,
                     detail=f"{home}: folders 0700, files 0600{bound}")
    named = "; ".join(f"{path} {mode:04o}" for path, mode in loose[:LOOSE_SHOWN])
    more = f"; and {len(loose) - LOOSE_SHOWN} more" if len(loose) > LOOSE_SHOWN else ""
    return Check(name="private state", ok=False, too_open=True,
                 detail=f"too open, others may read them{bound}: {named}{more}"
                        " (`tandem doctor --fix` makes them private)")


def fix_private() -> str:
    """Make everything under the state directory private, walked to the end; say what changed."""
    home = tandem_home()
    if not home.is_dir():
        return f"{home} does not exist yet: nothing to make private"
    changed, _ = prepare_home(home, limit=sys.maxsize, force=True)
    return f"made {changed} entr{'y' if changed == 1 else 'ies'} under {home} private"


def _configured() -> list[Check]:
    """The providers the settings name: the default, and each ACP agent's command."""
    from tandem.config.layers import resolve

    try:
        resolved = resolve(os.getcwd(), tandem_home())
    except Exception as e:  # a broken settings file is itself a finding
        return [Check(name="settings", ok=False, detail=str(e))]
    settings = resolved.settings
    out = [Check(name="default provider", ok=bool(settings.default_provider),
                 required=False,
                 detail=str(settings.default_provider or "not set (default_provider)"))]
    for name, agent in sorted((settings.acp_agents or {}).items()):
        found = shutil.which(agent.command[0])
        out.append(Check(name=f"ACP agent {name} (settings)", ok=bool(found), required=False,
                         detail=found or f"{agent.command[:1]} not on PATH"))
    project = resolved.project
    ignored = project.raw.get("acp_agents") if project and not resolved.trusted else None
    for name in sorted(ignored if isinstance(ignored, dict) else {}):
        if name not in (settings.acp_agents or {}):
            out.append(Check(name=f"ACP agent {name} (settings)", ok=False, required=False,
                             detail=f"in {project.path if project else ''}, ignored: "
                                    "the project is not trusted"))
    return out


def _project_trust() -> Check:
    """Whether this directory's project settings are trusted, and the keys left out if not."""
    from tandem.config.grants import trust_report

    report = trust_report(os.getcwd(), tandem_home())
    if not report.exists:
        return Check(name="project settings", ok=True, required=False,
                     detail=f"none ({report.path})")
    if report.error:
        return Check(name="project settings", ok=False, required=False,
                     detail=f"{report.path}: {report.error}")
    agent_files = [f.path for f in report.files if f.exists and f.path != report.path]
    if report.trusted or not (report.grants or agent_files):
        state = "trusted" if report.trusted else "nothing needs trust"
        return Check(name="project settings", ok=True, required=False,
                     detail=f"{report.path} ({state})")
    why = "changed since you trusted it" if report.changed else "not trusted"
    left = [f"{report.path}: ignored {', '.join(report.grants)}"] if report.grants else []
    if agent_files:
        left.append("agents start without their project configuration "
                    + ", ".join(agent_files))
    return Check(name="project settings", ok=False, required=False,
                 detail=f"{'; '.join(left)} ({why}; `tandem trust {report.root}` allows them)")


def checks() -> list[Check]:
    """Run every check and return the results in report order."""
    result = [Check(name="python", ok=sys.version_info >= (3, 11), detail=sys.version.split()[0])]
    result += [_package(p) for p in PACKAGES]
    result += _emacs()
    result.append(_state_dir())
    result.append(_private_modes())
    result += _configured()
    result.append(_project_trust())
    keys = secrets.lookup_env()  # keys live in memory, not in os.environ
    for provider, variables in families.key_vars().items():
        var = next((v for v in variables if keys.get(v)), variables[0])
        result.append(Check(name=f"provider {provider}", ok=bool(keys.get(var)),
                            required=False,
                            detail=f"{var} is set" if keys.get(var) else f"{var} not set"))
    for cmd in ACP_COMMANDS:
        path = shutil.which(cmd)
        result.append(Check(name=f"ACP agent {cmd}", ok=bool(path), required=False,
                            detail=path or "not on PATH"))
    return result


def report(items: list[Check]) -> str:
    """Format ITEMS as aligned text lines."""
    width = max(len(c.name) for c in items)
    lines = []
    for c in items:
        mark = "ok" if c.ok else "TOO OPEN" if c.too_open else "MISSING" if c.required else "-"
        lines.append(f"{mark:8} {c.name:{width}}  {c.detail}")
    return "\n".join(lines)


def _present(items: list[Check]) -> bool:
    """Whether every required part is there (a too-open one is there)."""
    return all(c.ok or c.too_open for c in items if c.required)


def run_cli(json_output: bool = False, fix: bool = False) -> int:
    """Print the report (after making the state private, with FIX); exit status 1
    when something required is missing or too open."""
    fixed = fix_private() if fix else None
    items = checks()
    if json_output:
        print(json.dumps([c.model_dump() for c in items]))
    else:
        if fixed:
            print(f"fixed: {fixed}")
        print(report(items))
    return 0 if all(c.ok for c in items if c.required) else 1


def report_data() -> dict[str, object]:
    """The report as data: text, whether every required part is there (``ok``),
    whether some of tandem's files are too open (``too_open``), each check."""
    items = checks()
    return {"text": report(items), "ok": _present(items),
            "too_open": any(c.too_open for c in items),
            "checks": [c.model_dump() for c in items]}
