"""indented_json.dumps writes the very text of json.dumps(indent=2, ensure_ascii=False)."""

from __future__ import annotations

import enum
import json

import pytest

from triage.report import indented_json


class _Word(str, enum.Enum):
    A = "a"


class _Number(enum.IntEnum):
    B = 2


CASES = [
    {}, [], "x", 3, 2.5, None, True, False, float("nan"), float("inf"), -float("inf"),
    {"a": [1, 2.5, float("nan"), True, False, None, (), [], {}, "é\n\"x\u2028\x00"], "t": (1, [{}]),
     "e": {"x": [[]]}, "n": {"deep": {"deeper": [{"k": "v"}, [1, [2, []]]]}}},
    {1: "int key", 2.5: "float key", None: "null key", False: "bool key", _Word.A: _Number.B},
    [_Word.A, _Number.B, -0.0, 10**30, 1e-300],
]


@pytest.mark.parametrize("value", CASES, ids=range(len(CASES)))
def test_same_text_as_json_dumps(value: object) -> None:
    assert indented_json.dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_unknown_type_is_refused_like_json() -> None:
    with pytest.raises(TypeError):
        json.dumps({"x": object()}, indent=2)
    with pytest.raises(TypeError):
        indented_json.dumps({"x": object()})
    with pytest.raises(TypeError):
        indented_json.dumps({object(): 1})
