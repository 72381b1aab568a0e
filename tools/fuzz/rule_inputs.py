"""Input class `hostile_rules`: a --rules folder with one broken or hostile rule file.
"""

from __future__ import annotations

import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import yaml

from .cases import RULES, text_file


def _base_rule(rng: random.Random) -> dict[str, object]:
    path = rng.choice(sorted(RULES.rglob("*.yaml")))
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["id"] = "fuzz-" + str(data["id"])
    return data


RULE_MUTATIONS: list[tuple[str, Callable[[random.Random, dict[str, object]], object]]] = []


def _rule_mutation(name: str) -> Callable[[Callable[[random.Random, dict[str, object]], object]], Callable[[random.Random, dict[str, object]], object]]:
    def deco(fn: Callable[[random.Random, dict[str, object]], object]) -> Callable[[random.Random, dict[str, object]], object]:
        RULE_MUTATIONS.append((name, fn))
        return fn
    return deco


@_rule_mutation("catastrophic-regex")
def _m_regex(rng: random.Random, r: dict[str, object]) -> object:
    # A valid rule (it loads), so the regex reaches the lines: what the time budgets are for.
    r["prefilter"] = ["aaaa"]
    r["regex"] = rng.choice([r"(a+)+$", r"(a|aa)+$", r"(a*)*b", r"^(\w+\s?)*$", r"(?:a+){20}$"])
    r["message"] = "a catastrophic regex"
    r["examples"] = {"match": ["aaaa"], "nomatch": ["aaaa!"]}
    for key in ("block", "info_fields", "scan"):
        r.pop(key, None)
    return r


@_rule_mutation("format-bomb-message")
def _m_message(rng: random.Random, r: dict[str, object]) -> object:
    r["message"] = rng.choice(["{rank:>99999}", "{rank:>999999999}", "{rank!r:{rank}}", "{0}", "{}",
                               "{rank.__class__.__mro__}", "{rank[0]}", "{nope}", "{{", "}", "{rank:%}",
                               "{rank:,>" + "9" * 30 + "}"])
    return r


@_rule_mutation("wrong-types")
def _m_types(rng: random.Random, r: dict[str, object]) -> object:
    key = rng.choice(sorted(r))
    r[key] = rng.choice([None, 1, -1, 1.5, True, [], {}, [1, 2], {"a": {"b": None}}, "x" * 10000,
                         2**70])
    return r


@_rule_mutation("missing-key")
def _m_missing(rng: random.Random, r: dict[str, object]) -> object:
    r.pop(rng.choice(sorted(r)))
    return r


@_rule_mutation("unknown-key")
def _m_unknown(rng: random.Random, r: dict[str, object]) -> object:
    r[rng.choice(["zzz", "scan", "block", "rank_field", "kind"])] = rng.choice(["last-line", {"lines": 10**9}, -5, "?"])
    return r


@_rule_mutation("not-a-mapping")
def _m_doc(rng: random.Random, r: dict[str, object]) -> object:
    return rng.choice([None, [], "just text", 42, [r, r]])


ALIAS_BOMB = """\
a: &a ["x","x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
id: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
"""

RAW_RULES = {
    "alias-bomb": ALIAS_BOMB,
    "python-tag": "!!python/object/apply:os.system ['true']\n",
    "duplicate-keys": "id: a\nid: b\n",
    "two-documents": "id: a\n---\nid: b\n",
    "binary": "\x00\x01\x02\xff",
    "tabs": "id:\ta\n\tregex: x\n",
    "deep-nesting": "id: " + "[" * 5000 + "]" * 5000 + "\n",
    "huge-int": "id: x\nseverity: " + "9" * 5000 + "\n",
    "empty": "",
    "lone-surrogate": 'id: fuzz-x\ntitle: "a \\ud800 b"\n',
}


def gen_hostile_rules(rng: random.Random, d: Path) -> tuple[list[str], str]:
    rules = d / "rules"
    rules.mkdir()
    if rng.random() < 0.3:
        what, text = rng.choice(sorted(RAW_RULES.items()))
        (rules / "bad.yaml").write_bytes(text.encode("utf-8", "surrogateescape"))
    else:
        r = _base_rule(rng)
        what, mutate = rng.choice(RULE_MUTATIONS)
        doc = mutate(rng, r)
        # Named after its id where it has one, as a rule file must be: the mutation is what is wrong.
        rule_id = r.get("id")
        fits = isinstance(rule_id, str) and re.fullmatch(r"[a-z0-9-]{1,100}", rule_id) is not None
        name = f"{rule_id}.yaml" if fits and doc is r else "bad.yaml"
        (rules / name).write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    logs = d / "logs"
    logs.mkdir()
    shutil.copyfile(text_file(rng), logs / "rank-0.log")
    # lines that hit the prefilters above and the catastrophic regexes
    (logs / "rank-1.log").write_text(("a" * 40 + "!\n") * 50 + "aaaa " * 2000 + "\n", encoding="utf-8")
    return ["logs", "--rules", "rules"], f"rules folder: {what}"
