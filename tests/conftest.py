"""Options of this test suite."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full-repro-matrix", action="store_true",
        help="run every torchrun fault case of test_repro_launched.py under both 1 and 2 agents (48 jobs); "
             "by default each case runs under one of them, alternating (24 jobs), to keep the suite short "
             "on a 2-core CI machine")
