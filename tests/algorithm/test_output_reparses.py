"""A synchronized program re-parses to itself: what the planner builds is what the
parser reads back from the printed text (semantics/ir.py `as_read`)."""

from __future__ import annotations

from algorithm.registry import get_strategy
from semantics.ir import BinOp, Const, IfExpr, Compare, Neg, Var, as_read
from semantics.parser import parse
from semantics.printer import print_expr, print_program

# A loop register whose initial value is a negative constant (`r1 = 2 * i - 1` at i = 0):
# printed `with r1 = -1 step 2`, read back as the negation of 1 (found by the
# generated-program property under the dev profile).
NEGATIVE_REGISTER = """\
engines LD PE
param N
for i in 0..1 {
  PE op0 writes s
  LD op1 writes s
  LD op2
}
LD op3
"""


def test_a_synchronized_program_with_a_negative_register_start_reparses_to_itself():
    out = get_strategy("threshold")(parse(NEGATIVE_REGISTER)).program
    text = print_program(out)
    assert "r1 = -1" in text
    assert parse(text) == out


def test_negative_constants_read_as_the_parser_reads_them():
    expr = IfExpr(Compare(">", Var("N"), Const(-2)), Const(-1), BinOp("+", Var("N"), Const(3)))
    read = as_read(expr)
    assert read == IfExpr(Compare(">", Var("N"), Neg(Const(2))), Neg(Const(1)), BinOp("+", Var("N"), Const(3)))
    text = f"kernel k\nengines A B\nparam N\nA a wait B >= {print_expr(read)}\n"
    assert parse(text).body[0].waits[0].threshold == read
