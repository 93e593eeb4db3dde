"""Read back what the Lean export wrote: the program term of `Kernels/<Name>.lean` and
the bounded claims (`check p v = true/false := by native_decide`), as plain Python data
in the shape of the Lean types of lean_export/lean/Syncproof/Syntax.lean.

This reads the emitted text, never semantics/ir.py: the mirror (lean_mirror.py) then
evaluates the Lean definitions on exactly the term Lean would elaborate. The grammar
covers the printer's output (constructor applications in dot notation, structure
instances, anonymous constructors, lists, pairs, `block [...]`, `some x`/`none`); text
outside it is a parse error, not a guess.

Shapes: an inductive value is a tuple `(constructor, *arguments)` (`("const", 3)`,
`("cmp", ("le",), a, b)`, `("range", lo, hi)`); a structure instance is a dict of its
fields as written (defaults are filled in by the mirror, as Lean does); an anonymous
constructor is a tuple of its fields; `some x` is `("some", x)` and `none` is `None`.
"""

from __future__ import annotations

import re

import attrs
from lark import Lark, Transformer, v_args

GRAMMAR = r"""
?value: ctor | atom | some | block
ctor: DOTNAME arg+
some: "some" arg
block: "block" list
?atom: STRING -> string
     | SIGNED_INT -> int
     | list
     | struct
     | anon
     | pair
     | "(" value ")"
     | DOTNAME -> bare
     | "none" -> none
?arg: STRING -> string
    | SIGNED_INT -> int
    | list
    | struct
    | anon
    | pair
    | "(" value ")"
    | DOTNAME -> bare
    | "none" -> none
list: "[" [value ("," value)*] "]"
pair: "(" value "," value ")"
anon: "⟨" value ("," value)* "⟩"
struct: "{" [field ("," field)*] "}"
field: NAME ":=" value
DOTNAME: /\.[A-Za-z_][A-Za-z0-9_]*/
NAME: /[A-Za-z_][A-Za-z0-9_]*/
STRING: /"(\\.|[^"\\])*"/
%import common.SIGNED_INT
%import common.WS
%ignore WS
"""


@v_args(inline=True)
class _ToData(Transformer):
    def string(self, token):
        return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), str(token)[1:-1])

    def int(self, token):
        return int(token)

    def bare(self, token):
        return (str(token)[1:],)

    def none(self):
        return None

    def ctor(self, name, *args):
        return (str(name)[1:], *args)

    def some(self, value):
        return ("some", value)

    def block(self, items):
        return ("block", items)

    def list(self, *items):
        return [] if items == (None,) else list(items)

    def pair(self, a, b):
        return (a, b)

    def anon(self, *fields):
        return tuple(fields)

    def struct(self, *fields):
        return {} if fields == (None,) else dict(fields)

    def field(self, name, value):
        return (str(name), value)


_PARSER = Lark(GRAMMAR, start="value", parser="lalr", transformer=_ToData())


def parse_term(text: str):
    """A term of the printer's grammar as plain data."""
    return _PARSER.parse(text)


@attrs.frozen
class Claim:
    """`theorem NAME : check PROGRAM VALUATION = EXPECTED := by native_decide`."""

    theorem: str
    program: str
    valuation: tuple[tuple[str, int], ...]
    expected: bool


@attrs.frozen
class KernelModule:
    """What the mirror needs from a generated kernel module."""

    programs: dict  # definition name -> the Program term as data
    claims: tuple[Claim, ...]
    decide_count: int  # occurrences of `decide` / `native_decide` (every one must be a claim)


_PROGRAM = re.compile(r"^def (\S+) : Program :=\n(.*?)\n\n", re.S | re.M)
_CLAIM = re.compile(r"^theorem (\S+) :\s+check (\S+) (\[.*?\]) = (true|false) := by native_decide$", re.M)
_DECIDE = re.compile(r"\b(?:native_)?decide\b")


def read_module(text: str) -> KernelModule:
    """The program definitions and the `native_decide` claims of a kernel module."""
    programs = {name: parse_term(body) for name, body in _PROGRAM.findall(text + "\n\n")}
    claims = tuple(Claim(name, program, tuple(parse_term(valuation)), expected == "true")
                   for name, program, valuation, expected in _CLAIM.findall(text))
    return KernelModule(programs, claims, len(_DECIDE.findall(_strip_comments(text))))


def _strip_comments(text: str) -> str:
    text = re.sub(r"/-.*?-/", "", text, flags=re.S)  # the export never nests comments
    return re.sub(r"--[^\n]*", "", text)


# ------------------------------------------------ the library's declarations

MIRRORED_MODULES = ("Syntax", "Semantics", "Check")  # Bisim.lean holds Props only
_DECLARATION = re.compile(r"^(?:def|abbrev|structure|inductive|theorem)\s+([^\s(:]+)")


def declarations(text: str) -> dict[str, str]:
    """Each top-level declaration of a library file, by name: its first line and the
    indented lines after it (up to a blank line or the next top-level line)."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    for n, line in enumerate(lines):
        match = _DECLARATION.match(line)
        if match:
            body = [line]
            for more in lines[n + 1:]:
                if not more.strip() or not more[0].isspace():
                    break
                body.append(more)
            out[match.group(1)] = "\n".join(body)
    return out


def library_digests(texts: dict[str, str]) -> dict[str, str]:
    """`Module.name` -> a short digest of the declaration's text, for the mirrored
    modules (`texts`: module name -> file text)."""
    import hashlib

    return {f"{module}.{name}": hashlib.sha256(body.encode()).hexdigest()[:12]
            for module in MIRRORED_MODULES for name, body in declarations(texts[module]).items()}
