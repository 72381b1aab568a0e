"""Run one principle's code so that its failure cannot end the analysis.

A principle that raises is a bug in triage, not in the job: the verdict is decided by the others, it
names the principle and the exception and says it may be incomplete (Verdict.failed), and a
`PrincipleFailed` warning is issued, which the test suite turns into an error (pyproject.toml's
filterwarnings): a failure is visible to a user and fatal to a test, never silent.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TypeVar

from triage.diagnose.principles.principle import Principle
from triage.model import PrincipleFailure

T = TypeVar("T")


class PrincipleFailed(RuntimeWarning):
    """A principle raised; the verdict was decided without it."""


def isolated(failed: list[PrincipleFailure], principle: Principle, call: Callable[..., T], *args: object) -> T | None:
    """`call(*args)` (the principle's run, evidence or remark), or None when it raises: the failure is
    added to `failed` (once per principle) and warned of."""
    try:
        return call(*args)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        if not any(f.principle == principle.name for f in failed):
            failed.append(PrincipleFailure(principle=principle.name, error=error))
        warnings.warn(f"principle {principle.name} failed ({error}); the verdict was decided without it",
                      PrincipleFailed, stacklevel=2)
        return None
