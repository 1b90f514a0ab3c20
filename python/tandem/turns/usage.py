"""What a session's turns cost in tokens: totals from the journal's ``turn_end`` entries.

Every turn that ended counts, rewound or compacted ones too: they were paid
for. Totals are kept per provider name so that a price table keyed by model
can price each part.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tandem.config.agent_files import project_instructions
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import (
    InstructionFile,
    ProviderUsageCounts,
    UsageCounts,
    UsageReport,
)
from tandem.sessions.service import SessionService
from tandem.store.entry_view import JournalEntry

TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
"""The counters of a turn's ``usage`` (a missing one counts as 0)."""


class UsageTotals(UsageCounts):
    """Token counts summed over some turns, counted as they are read."""

    def add(self, usage: Mapping[str, Any]) -> None:
        """Count one turn whose ``usage`` is USAGE (non-numbers count as 0)."""
        self.turns += 1
        for key in TOKEN_KEYS:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                setattr(self, key, getattr(self, key) + value)


class ProviderUsage(UsageTotals):
    """The totals of the turns one provider ran."""

    provider: str
    model: str = ""


def session_usage(entries: Iterable[JournalEntry]) -> tuple[UsageTotals, list[ProviderUsage]]:
    """The session's totals and the same per provider, in order of first use."""
    started: dict[int, tuple[str, str]] = {}
    total = UsageTotals()
    by_provider: dict[str, ProviderUsage] = {}
    for e in entries:
        if e["type"] == "turn_start" and isinstance(turn := e["turn"], int):
            started[turn] = (str(e.get("provider") or ""), str(e.get("model") or ""))
        elif e["type"] == "turn_end" and isinstance(turn := e["turn"], int):
            found = e.get("usage")
            usage: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
            provider, model = started.get(turn, ("", ""))
            total.add(usage)
            part = by_provider.setdefault(provider, ProviderUsage(provider=provider, model=model))
            part.add(usage)
    return total, list(by_provider.values())


class ProviderChoice:
    """`session_provider_choice` kept beside a journal's entries (an `EntryCache` view):
    each send reads what was appended since, not the whole journal."""

    def __init__(self) -> None:
        self.count = 0
        self.chosen: str | None = None
        """The provider the user last chose (``provider_change``), or None."""

    def sync(self, entries: Sequence[JournalEntry]) -> None:
        """Take in ENTRIES[count:], the entries appended since the last call."""
        found = session_provider_choice(entries[self.count:])
        if found is not None:
            self.chosen = found
        self.count = len(entries)


def session_provider_choice(entries: Iterable[JournalEntry]) -> str | None:
    """The provider the user last chose for this session (``provider_change``), or None."""
    chosen: str | None = None
    for e in entries:
        if e["type"] == "provider_change" and isinstance(e["provider"], str):
            chosen = e["provider"]
    return chosen


def usage_report(sessions: SessionService, session: str) -> UsageReport:
    """SESSION's token totals, overall and per provider, the provider it would use, its
    title and the project instruction files its next request carries (path, size)."""
    journal = sessions.journal(session)
    entries = sessions.entries(journal)
    total, parts = session_usage(entries)
    chosen = session_provider_choice(entries)
    provider = chosen
    if provider is None:  # the default the next turn would use, if any
        try:
            provider = sessions.provider_for(sessions.settings(sessions.root_of(journal)), None)
        except TandemError:
            provider = None
    root = sessions.root_of(journal)
    found = project_instructions(root, *sessions.resolved(root).settings.instruction_files())
    return UsageReport(
        total=total,
        by_provider=[ProviderUsageCounts.model_validate(u, from_attributes=True) for u in parts],
        provider=provider, chosen=chosen is not None, title=journal.header.title,
        instructions=[InstructionFile(path=i.path, size=i.size) for i in found])
