"""Options of this test suite."""

from __future__ import annotations

import os
import tempfile

import pytest

# Compiled matchers are cached on disk (triage.parse.needles); the suite keeps its own cache, so
# it neither reads nor fills the user's.
os.environ.setdefault("TRIAGE_CACHE_DIR", tempfile.mkdtemp(prefix="triage-test-cache-"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full-repro-matrix", action="store_true",
        help="run every torchrun fault case of test_repro_under_launcher.py under both 1 and 2 agents (48 jobs); "
             "by default each case runs under one of them, alternating (24 jobs), to keep the suite short "
             "on a 2-core CI machine")
