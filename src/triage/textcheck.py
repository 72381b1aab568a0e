"""Text that cannot be written: a lone surrogate (U+D800-U+DFFF) that a `\\ud800` escape in JSON or
YAML gives back. No log decodes to one (bytes are decoded with replacement), so one can only come
from a document someone wrote or damaged; it is refused where such documents are read (extracts,
user rules), rather than found when the report is written."""

from __future__ import annotations

from typing import Any


def lone_surrogate(value: Any) -> bool:
    """Whether a string, or any key or string inside lists and mappings, holds a lone surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
