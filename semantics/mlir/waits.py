"""Reading the `syncproof` dialect back (semantics/mlir/dialect.py): a program that
`sync --emit mlir` or the `syncproof-insert-sync` pass wrote imports with its waits.

- the `syncproof.wait`s right before an op are that op's waits (`wait COUNTER >= T` on
  the kernel op of core `core`; a global op's replica per core); the threshold's
  operand names stand for their SSA values' kernel expressions (an induction variable
  of a loop with a step is `lo + step * trip`), `iters(v)` for the loop marked
  `syncproof.loop = "v"`, `count(C)` for the ops of core C before the op in program
  order (C a core of the program), other names for the import's parameters;
- the counter semantics counts every completed op of a core, so a core whose counter
  some wait reads must signal after every one of its ops: a missing or stray
  `syncproof.signal` is an error (the waits' thresholds would count something else).

Errors are KernelErrors at the offending op.
"""

from __future__ import annotations

import re

from semantics.errors import KernelError
from semantics.ir import BinOp, Const, Count, Expr, Iters, Op, Var, Wait, map_expr, walk_expr, walk_stmts
from semantics.mlir.parse import op_name
from semantics.simplify import linear, simplify

WAIT, SIGNAL, LOOP_ATTR = "syncproof.wait", "syncproof.signal", "syncproof.loop"
_WORDS = frozenset({"if", "then", "else", "and", "or", "not", "min", "max", "iters"})
_COUNT = re.compile(r"\bcount\s*\(\s*([A-Za-z_][A-Za-z_0-9]*)\s*\)")


def threshold_names(text: str) -> list[str]:
    """The names a threshold's text mentions (operands, parameters, loops of `iters`),
    not the cores of `count(C)`."""
    return list(dict.fromkeys(w for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", _COUNT.sub(" ", text))
                              if w not in _WORDS))


def counted_cores(text: str) -> list[str]:
    """The cores C of the `count(C)` a threshold's text mentions."""
    return list(dict.fromkeys(_COUNT.findall(text)))


def parse_threshold(text: str) -> Expr:
    """A threshold's text as a kernel-language expression (Var for every name, Iters for
    `iters(v)`, Count for `count(C)`), parsed by the kernel language's own parser as the
    wait of a one-op kernel; a KernelError (without location) when it is not one."""
    from semantics.parser import parse

    names = threshold_names(text)
    if "\n" in text or "#" in text:
        raise KernelError(f"threshold '{text}' is not an expression")
    engines = " ".join(dict.fromkeys(["A", *counted_cores(text)]))
    kernel = (f"engines {engines}\n" + "".join(f"for {n} in 0..1 {{\n" for n in names)
              + f"A op wait A >= {text}\n" + "}\n" * len(names))
    try:
        body = parse(kernel).body
    except KernelError as err:
        raise KernelError(f"threshold '{text}' is not a kernel-language expression ({err.message})") from None
    for _ in names:
        body = body[0].body
    return body[0].waits[0].threshold


def free_names(expr: Expr) -> tuple[list[str], list[str]]:
    """(names of Vars, loops of Iters) in a parsed threshold."""
    nodes = list(walk_expr(expr))
    return ([n.name for n in nodes if isinstance(n, Var)], [n.var for n in nodes if isinstance(n, Iters)])


class WaitReader:
    """The importer's companion: collects waits until their op, checks signals."""

    def __init__(self, values, params, error):
        self.values, self.params, self.error = values, params, error  # params: () -> known parameter names
        self.pending: list = []  # syncproof.wait ops not yet given to an op
        self.loops: dict[str, str] = {}  # syncproof.loop name -> the loop's kernel variable
        self.loop_vars: list[str] = []  # every scf.for's kernel variable so far
        self.open: tuple = ()  # (op, cores) whose signals may follow now
        self.signalled: set = set()  # cores that signalled after `open`'s op
        self.unsignalled: dict[str, object] = {}  # core -> its first op without a signal

    # -- ops of the dialect
    def take(self, op) -> bool:
        """Consume a syncproof op (True), or close the signal window of the op before."""
        name = op_name(op)
        if name in (WAIT, SIGNAL):
            self._verify(op)
        if name == WAIT:
            self.pending.append(op)
            return True
        if name == SIGNAL:
            core = str(op.attributes["core"].data)
            if not self.open or core not in self.open[1] or core in self.signalled:
                self.error(f"syncproof.signal of core {core} does not follow an op of that core", op)
            self.signalled.add(core)
            return True
        self._close()
        return False

    def _verify(self, op) -> None:
        """The dialect's verifier (semantics/mlir/dialect.py), as a KernelError at the op."""
        from xdsl.utils.exceptions import VerifyException

        try:
            op.verify()
        except VerifyException as err:
            self.error(f"{op_name(op)}: {err}", op)

    def loop(self, op, var: str) -> None:
        self.loop_vars.append(var)
        marked = op.attributes.get(LOOP_ATTR)
        if marked is not None:
            self.loops[str(marked.data)] = var

    def structure(self, op) -> None:
        """`op` is not one a wait can belong to (a loop, an if, a barrier, a terminator)."""
        if self.pending:
            self.error(f"syncproof.wait before '{op_name(op)}': a wait must come right before the op it guards",
                       self.pending[0])

    def finish(self, body) -> None:
        self._close()
        if self.pending:
            self.error("syncproof.wait at the end of a block: a wait must come right before the op it guards",
                       self.pending[0])
        read = {w.engine for s in walk_stmts(body) if isinstance(s, Op) for w in s.waits}
        for core in sorted(read & set(self.unsignalled)):
            self.error(f"'{op_name(self.unsignalled[core])}' runs on {core}, whose counter a syncproof.wait "
                       f"reads, but no syncproof.signal of {core} follows it", self.unsignalled[core])

    # -- the op the pending waits guard
    def waits_for(self, op, cores: tuple[str, ...]) -> dict[str, tuple[Wait, ...]]:
        """core -> the kernel waits of `op`'s op on that core; opens its signal window."""
        out: dict[str, list] = {core: [] for core in cores}
        for wait in self.pending:
            core = str(wait.attributes["core"].data)
            if core not in out:
                self.error(f"syncproof.wait of core {core} guards '{op_name(op)}', which runs on "
                           f"{' and '.join(cores)}", wait)
            out[core].append(Wait(str(wait.attributes["counter"].data), self._threshold(wait)))
        self.pending = []
        self.open, self.signalled = (op, cores), set()
        return {core: tuple(ws) for core, ws in out.items()}

    def _threshold(self, wait):
        text = str(wait.attributes["threshold"].data)
        names_attr = wait.attributes.get("names")
        names = str(names_attr.data).split() if names_attr is not None else []
        expr = parse_threshold(text)
        operands = dict(zip(names, wait.operands))
        variables, loops = free_names(expr)
        known = set(self.params())
        for name in variables:
            if name not in operands and name not in known:
                self.error(f"syncproof.wait: '{name}' in '{text}' is neither an operand (names) nor a parameter", wait)
        for loop in loops:
            if loop not in self.loops:
                self.error(f"syncproof.wait: iters({loop}) names no enclosing or earlier scf.for marked "
                           f"{LOOP_ATTR} = \"{loop}\"", wait)

        def substitute(node):
            match node:
                case Var(name=name) if name in operands:
                    return self.values.expr(operands[name], wait)
                case Iters(var=loop):
                    return Iters(self.loops[loop])
            return node

        return simplify(map_expr(map_expr(expr, substitute), self._trip_index))

    def _trip_index(self, node):
        """`(iv - lo) // step` over a loop with a runtime step, the induction value
        substituted (`lo + t * step`), is the trip index `t`: scf.for steps are positive
        (the importer assumes it too), so the quotient is exact."""
        if isinstance(node, BinOp) and node.op == "//" and not isinstance(node.right, Const):
            for var in self.loop_vars:
                if not any(linear(BinOp("-", node.left, BinOp("*", node.right, Var(var)))).values()):
                    return Var(var)
        return node

    def _close(self) -> None:
        if self.open:
            op, cores = self.open
            for core in cores:
                if core not in self.signalled:
                    self.unsignalled.setdefault(core, op)
        self.open, self.signalled = (), set()
