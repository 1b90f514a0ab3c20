"""Fixtures of the ACP provider tests: ``tests/`` on sys.path for the fakes
and the adapter installer."""

from __future__ import annotations


