"""Fixtures of the settings-trust tests (see `trust_helpers`)."""

from trust_helpers import hostile

__all__ = ["hostile"]
