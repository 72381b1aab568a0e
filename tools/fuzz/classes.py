"""The input classes by name, in the order the driver cycles through them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from .archive_inputs import gen_archives
from .dump_inputs import gen_dump_structure
from .extract_inputs import gen_extract_mutation
from .file_inputs import gen_deep_folders, gen_odd_names, gen_special_files
from .rule_inputs import gen_hostile_rules
from .text_inputs import (
    gen_fixture_mutation,
    gen_garbage,
    gen_huge_numbers,
    gen_invalid_utf8,
    gen_line_endings,
    gen_long_lines,
    gen_nul_bytes,
)

CLASSES: dict[str, Callable[[random.Random, Path], tuple[list[str], str]]] = {
    "fixture_mutation": gen_fixture_mutation,
    "garbage": gen_garbage,
    "nul_bytes": gen_nul_bytes,
    "line_endings": gen_line_endings,
    "invalid_utf8": gen_invalid_utf8,
    "long_lines": gen_long_lines,
    "huge_numbers": gen_huge_numbers,
    "deep_folders": gen_deep_folders,
    "special_files": gen_special_files,
    "archives": gen_archives,
    "odd_names": gen_odd_names,
    "hostile_rules": gen_hostile_rules,
    "extract_mutation": gen_extract_mutation,
    "dump_structure": gen_dump_structure,
}
