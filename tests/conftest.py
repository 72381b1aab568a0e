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
        "--full-matrix", "--full-repro-matrix", action="store_true", dest="full_matrix",
        help="run the whole of each multi-process matrix: every `triage repro` fault in every phase "
             "(tests/test_repro.py), and every torchrun fault case under both 1 and 2 agents "
             "(tests/test_repro_under_launcher.py), and the tests marked `matrix` (watch's traps beyond its "
             "slice, health's freeze points beyond one); by default a representative slice runs, to keep "
             "the suite short on a 2-core CI machine (also: TRIAGE_FULL_MATRIX=1)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `matrix` run with --full-matrix (or TRIAGE_FULL_MATRIX=1) only: .ci/run runs them
    in a step of its own, after the README's command."""
    from repro_helpers import full_matrix

    if full_matrix(config):
        return
    skip = pytest.mark.skip(reason="beyond the suite's slice of the multi-process matrix (--full-matrix runs it)")
    for item in items:
        if item.get_closest_marker("matrix") is not None:
            item.add_marker(skip)
