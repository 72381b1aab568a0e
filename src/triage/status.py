"""A verdict's status: diagnosed, inconclusive or no failure.

A module of its own (re-exported by triage.model) so that the exit-code contract, which every
command's help states, is read without importing the whole model (~12 ms of `triage --help`).
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    DIAGNOSED = "diagnosed"
    INCONCLUSIVE = "inconclusive"
    NO_FAILURE = "no_failure"
