"""semantics/simplify.py `cond`: a conjunct repeated anywhere in a chain of `and` is
dropped (a threshold's `if` chains are evaluated at every wait instance, so each
repeated comparison is run-time work), and the condition keeps its meaning."""

from __future__ import annotations

import itertools

from semantics.evaluate import eval_cond
from semantics.ir import And, Compare, Const, Var
from semantics.printer import print_expr
from semantics.simplify import cond

TP_POSITIVE = Compare(">", Var("TP"), Const(0))
I_STARTED = Compare(">=", Var("i"), Const(1))
C_SMALL = Compare("<", Var("c"), Const(2))


def test_a_conjunct_repeated_further_down_the_chain_is_dropped():
    chain = And(And(And(And(TP_POSITIVE, I_STARTED), TP_POSITIVE), C_SMALL), TP_POSITIVE)
    assert print_expr(cond(chain)) == "TP > 0 and i >= 1 and c < 2"


def test_dropping_repeated_conjuncts_keeps_the_meaning():
    chains = [And(And(TP_POSITIVE, I_STARTED), TP_POSITIVE),
              And(And(I_STARTED, C_SMALL), And(I_STARTED, TP_POSITIVE)),
              And(C_SMALL, And(C_SMALL, C_SMALL))]
    for chain, (tp, i, c) in itertools.product(chains, itertools.product(range(-1, 3), repeat=3)):
        env = {"TP": tp, "i": i, "c": c}
        assert eval_cond(cond(chain), env) == eval_cond(chain, env)


def test_distinct_conjuncts_all_stay():
    chain = And(And(TP_POSITIVE, I_STARTED), C_SMALL)
    assert print_expr(cond(chain)).count(" and ") == 2
