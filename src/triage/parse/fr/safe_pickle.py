"""Load a pickle that may only build builtin containers and scalars, or refuse it with the reason.

A flight-recorder dump is a pickle (protocol 2, written by torch's jit pickler) of dicts, lists,
tuples, strings, numbers, booleans and None; nothing in it needs code to rebuild. `pickle.load`
would run whatever a hostile file asks for (a REDUCE of `os.system`), so nothing here calls it on
bytes that were not checked first:

1. The opcode stream is walked before anything is built: every opcode must be on the allow-list
   below (binary forms of scalars and builtin containers, the memo, marks): GLOBAL, STACK_GLOBAL,
   INST, OBJ, REDUCE, BUILD, NEWOBJ(_EX), EXT*, PERSID, BINPERSID, the out-of-band buffers, LONG4
   and the protocol-0 text forms are refused by name.
2. The walk simulates the unpickler's stack abstractly, so the size of what would be built is
   known before it is: its nesting depth and its element count *expanded* (a memo reference counts
   the whole of what it refers to, so a bomb of shared references is refused, not built). A
   container changed after it was nested in another (the only way to make a cycle, or to hide
   depth behind the memo) is refused: a pickler never writes one. Memo indices must be the
   pickler's own (no index beyond those already stored), so the memo cannot be made to allocate.
3. Only then is it loaded, by an Unpickler whose `find_class` and `persistent_load` refuse
   everything (defence in depth: step 1 already refused every opcode that would call them).

Anything else (a truncated file, bytes after STOP, a dict key that is a list) is `Refused` with
the reason in words; nothing is raised past `load`.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import struct
from typing import Any

MAX_BYTES = 256 << 20  # a 2,000-entry dump with stacks is 1-5 MB; 20,000 entries, tens of MB
MAX_DEPTH = 32  # a dump nests 5 deep (dict > entries > entry > frames > frame)
MAX_ELEMENTS = 32 << 20  # elements once memo references are expanded (20,000 entries: ~5M)


class Refused(ValueError):
    """Why a pickle was not loaded, in words."""


# How each allowed opcode's argument is laid out: a fixed size, or a length prefix of n bytes.
_FIXED, _LEN = 0, 1
_ARGS: dict[str, tuple[int, int]] = {
    "PROTO": (_FIXED, 1), "FRAME": (_FIXED, 8), "BININT": (_FIXED, 4), "BININT1": (_FIXED, 1),
    "BININT2": (_FIXED, 2), "BINFLOAT": (_FIXED, 8), "BINGET": (_FIXED, 1),
    "LONG_BINGET": (_FIXED, 4), "BINPUT": (_FIXED, 1), "LONG_BINPUT": (_FIXED, 4),
    "LONG1": (_LEN, 1), "SHORT_BINUNICODE": (_LEN, 1), "BINUNICODE": (_LEN, 4),
    "BINUNICODE8": (_LEN, 8), "SHORT_BINBYTES": (_LEN, 1), "BINBYTES": (_LEN, 4),
    "BINBYTES8": (_LEN, 8),
}
_NO_ARG = ("STOP", "MARK", "POP", "POP_MARK", "DUP", "NONE", "NEWTRUE", "NEWFALSE", "EMPTY_LIST",
           "APPEND", "APPENDS", "LIST", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
           "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_SET", "ADDITEMS", "FROZENSET",
           "MEMOIZE")
_CODES: dict[str, int] = {op.name: op.code.encode("latin-1")[0] for op in pickletools.opcodes}
_NAMES: dict[int, str] = {code: name for name, code in _CODES.items()}
ALLOWED = frozenset(_ARGS) | frozenset(_NO_ARG)
# Opcode byte -> (name, argument layout); None for every opcode that is not allowed.
_TABLE: list[tuple[str, int, int] | None] = [None] * 256
for _name in ALLOWED:
    _kind, _size = _ARGS.get(_name, (_FIXED, 0))
    _TABLE[_CODES[_name]] = (_name, _kind, _size)

_LIST, _DICT, _SET, _TUPLE, _FROZEN = "list", "dict", "set", "tuple", "frozenset"


class _Box:
    """What the simulated unpickler knows of one container it would build."""

    __slots__ = ("depth", "kind", "nested", "weight")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.depth = 1
        self.weight = 1
        self.nested = False  # placed inside another container: from then on it may not change


_SCALAR = object()  # any scalar: depth 0, weight 1


def check(data: bytes, *, max_depth: int = MAX_DEPTH, max_elements: int = MAX_ELEMENTS) -> None:
    """Refuse `data` unless it is a pickle of builtin containers and scalars within the bounds."""
    if len(data) > MAX_BYTES:
        raise Refused(f"larger than {MAX_BYTES >> 20} MiB")
    _Walk(data, max_depth, max_elements).run()


# The opcodes the walk treats alike, by byte (the hot ones are tested first).
_C = _CODES
_BINGET, _LONG_BINGET, _BINPUT, _LONG_BINPUT, _MEMOIZE = (
    _C["BINGET"], _C["LONG_BINGET"], _C["BINPUT"], _C["LONG_BINPUT"], _C["MEMOIZE"])
_MARK, _APPEND, _APPENDS, _SETITEM, _SETITEMS = _C["MARK"], _C["APPEND"], _C["APPENDS"], _C["SETITEM"], _C["SETITEMS"]
_EMPTY = {_C["EMPTY_LIST"]: _LIST, _C["EMPTY_DICT"]: _DICT, _C["EMPTY_SET"]: _SET, _C["EMPTY_TUPLE"]: _TUPLE}
# Scalars with a fixed-size argument (or none): the argument's size.
_FIXED_SCALARS = {_C[n]: _ARGS.get(n, (_FIXED, 0))[1]
                  for n in ("BININT", "BININT1", "BININT2", "BINFLOAT", "NONE", "NEWTRUE", "NEWFALSE")}
# Scalars with a length prefix: the prefix's size.
_SIZED_SCALARS = {_C[n]: _ARGS[n][1] for n in ("LONG1", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8",
                                                "SHORT_BINBYTES", "BINBYTES", "BINBYTES8")}


class _Walk:
    """One walk of an opcode stream: the unpickler's stack, marks and memo, simulated."""

    def __init__(self, data: bytes, max_depth: int, max_elements: int) -> None:
        self.data, self.max_depth, self.max_elements = data, max_depth, max_elements
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: list[Any] = []

    def run(self) -> None:
        data, stack, marks, memo = self.data, self.stack, self.marks, self.memo
        fixed, sized, empty = _FIXED_SCALARS, _SIZED_SCALARS, _EMPTY
        scalar = _SCALAR
        pos, end = 0, len(data)
        try:
            while pos < end:
                code = data[pos]
                pos += 1
                if code == _BINGET:
                    stack.append(memo[data[pos]])
                    pos += 1
                elif code in fixed:
                    pos += fixed[code]
                    stack.append(scalar)
                elif code in (_LONG_BINPUT, _BINPUT):
                    size = 4 if code == _LONG_BINPUT else 1
                    index = data[pos] if size == 1 else int.from_bytes(data[pos:pos + 4], "little")
                    if index == len(memo) and stack:  # the pickler's own order: the next index
                        memo.append(stack[-1])
                    else:
                        self.put(index, pos - 1)
                    pos += size
                elif code in empty:
                    stack.append(_Box(empty[code]))
                elif code == _MARK:
                    marks.append(len(stack))
                elif code == _APPEND:
                    item = stack.pop()
                    self.grow(self.top(_LIST, pos - 1), [item], pos - 1)
                elif code in (_APPENDS, _SETITEMS):
                    items = self.popmark(pos - 1)
                    if code == _SETITEMS:
                        self.pairs(items, pos - 1)
                    self.grow(self.top(_LIST if code == _APPENDS else _DICT, pos - 1), items, pos - 1)
                elif code in sized:
                    size = sized[code]
                    pos += size + int.from_bytes(data[pos:pos + size], "little")
                    stack.append(scalar)
                else:
                    pos = self.rare(code, pos)
                    if pos < 0:
                        return
                if pos > end:
                    raise Refused("truncated (cut inside an opcode's argument)")
        except IndexError:
            if pos >= end:
                raise Refused("truncated (cut inside an opcode's argument)") from None
            raise Refused(f"an opcode at byte {pos - 1} reads a value that is not there "
                          "(an empty stack or a memo index never stored)") from None
        raise Refused("truncated (no STOP opcode: the file was cut short)")

    def rare(self, code: int, pos: int) -> int:
        """Every other allowed opcode; the position after it (-1 after STOP)."""
        data, stack, marks, where = self.data, self.stack, self.marks, pos - 1
        spec = _TABLE[code]
        if spec is None:
            name = _NAMES.get(code)
            raise Refused(f"opcode {name} at byte {where} is not allowed (it would build an object "
                          "or call code)" if name else f"byte {code:#04x} at {where} is not a pickle opcode")
        name, _kind, size = spec
        if name == "LONG_BINGET":
            stack.append(self.memo[int.from_bytes(data[pos:pos + 4], "little")])
        elif name == "MEMOIZE":
            self.put(len(self.memo), where)
        elif name == "SETITEM":
            value, key = stack.pop(), stack.pop()
            self.pairs([key, value], where)
            self.grow(self.top(_DICT, where), [key, value], where)
        elif name == "ADDITEMS":
            items = self.popmark(where)
            _keys_hashable(items, where)
            self.grow(self.top(_SET, where), items, where)
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            n = int(name[-1])
            if len(stack) - (marks[-1] if marks else 0) < n:
                raise Refused(f"{name} on a short stack (at byte {where})")
            items = stack[-n:]
            del stack[-n:]
            stack.append(self.new(_TUPLE, items, where))
        elif name in ("TUPLE", "LIST", "FROZENSET", "DICT"):
            items = self.popmark(where)
            if name == "DICT":
                self.pairs(items, where)
            elif name == "FROZENSET":
                _keys_hashable(items, where)
            kind = {"TUPLE": _TUPLE, "LIST": _LIST, "FROZENSET": _FROZEN, "DICT": _DICT}[name]
            stack.append(self.new(kind, items, where))
        elif name == "POP":
            if marks and marks[-1] == len(stack):
                marks.pop()
            else:
                stack.pop()
        elif name == "POP_MARK":
            self.popmark(where)
        elif name == "DUP":
            stack.append(stack[-1])
        elif name == "STOP":
            if marks or len(stack) != 1:
                raise Refused(f"STOP with {len(stack)} values and {len(marks)} marks left (at byte {where})")
            if pos != len(data):
                raise Refused(f"{len(data) - pos} bytes after the end of the pickle")
            return -1
        return pos + size  # PROTO, FRAME and the rest: their argument skipped

    def put(self, index: int, where: int) -> None:
        memo = self.memo
        if not self.stack:
            raise Refused(f"memo store of an empty stack (at byte {where})")
        if index > len(memo):
            raise Refused(f"memo index {index} at byte {where} skips ahead of the {len(memo)} stored")
        if index == len(memo):
            memo.append(self.stack[-1])
        else:
            memo[index] = self.stack[-1]

    def popmark(self, where: int) -> list[Any]:
        if not self.marks:
            raise Refused(f"a container opcode without its MARK (at byte {where})")
        at = self.marks.pop()
        items = self.stack[at:]
        del self.stack[at:]
        return items

    def top(self, kind: str, where: int) -> _Box:
        box = self.stack[-1]
        if not isinstance(box, _Box) or box.kind != kind:
            raise Refused(f"adds items to something that is not a {kind} (at byte {where})")
        return box

    def pairs(self, items: list[Any], where: int) -> None:
        if len(items) % 2:
            raise Refused(f"a dict built from an odd number of items (at byte {where})")
        _keys_hashable(items[0::2], where)

    def new(self, kind: str, items: list[Any], where: int) -> _Box:
        box = _Box(kind)
        self.grow(box, items, where)
        return box

    def grow(self, box: _Box, items: list[Any], where: int) -> None:
        if box.nested:
            raise Refused(f"a {box.kind} is changed after it was nested in another (at byte {where}): "
                          "a cycle or a shared-reference trick, never written by a pickler")
        scalar = _SCALAR
        weight, depth = box.weight, box.depth
        for item in items:
            if item is scalar:
                weight += 1
                continue
            if item is box:
                raise Refused(f"a {box.kind} contains itself (at byte {where})")
            item.nested = True
            weight += item.weight
            if item.depth >= depth:
                depth = item.depth + 1
        box.weight, box.depth = weight, depth
        if depth > self.max_depth:
            raise Refused(f"nested deeper than {self.max_depth} levels (at byte {where})")
        if weight > self.max_elements:
            raise Refused(f"more than {self.max_elements} elements once shared references are expanded "
                          f"(at byte {where}): a pickle bomb")


def _keys_hashable(keys: list[Any], where: int) -> None:
    for key in keys:
        if isinstance(key, _Box) and key.kind not in (_TUPLE, _FROZEN):
            raise Refused(f"a {key.kind} used as a dict key or set item (at byte {where})")


class _NoCode(pickle.Unpickler):
    """An Unpickler that can resolve no class, function or persistent id."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"global {module[:60]}.{name[:60]} refused")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent id refused")


def load(data: bytes) -> Any:
    """The value `data` pickles, when it passes `check`; Refused otherwise."""
    check(data)
    try:
        return _NoCode(io.BytesIO(data)).load()
    except RecursionError:
        raise Refused("nested too deeply to load") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
            AttributeError, struct.error, UnicodeDecodeError, MemoryError, OverflowError) as exc:
        raise Refused(f"cannot be loaded: {type(exc).__name__}: {str(exc)[:120]}") from None
