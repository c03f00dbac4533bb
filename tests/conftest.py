"""Shared fixtures (helpers live in `tests/helpers.py`)."""

from __future__ import annotations

import os

import pytest

# The jobs the tests run use one worker unless a test asks for more (`--workers`): the default,
# every core, would start worker processes for each of the suite's many small jobs.
os.environ.setdefault("FOOTPRINT_AUDIT_WORKERS", "1")

from helpers import ROOT


@pytest.fixture
def in_repo(monkeypatch):
    """Run from the repository root, so relative globs name files as the examples expect."""
    monkeypatch.chdir(ROOT)
    return ROOT
