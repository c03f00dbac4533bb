"""Shared fixtures (helpers live in `tests/helpers.py`)."""

from __future__ import annotations

import pytest

from helpers import ROOT


@pytest.fixture
def in_repo(monkeypatch):
    """Run from the repository root, so relative globs name files as the examples expect."""
    monkeypatch.chdir(ROOT)
    return ROOT
