"""The syncproof dialect (semantics/mlir/dialect.py) and reading it back
(semantics/mlir/waits.py): ops that verify only when well formed, generic text that
parses back to the same text, and waits that import as the kernel waits they say."""

from __future__ import annotations

import pytest

from semantics.errors import KernelError
from semantics.ir import BinOp, Const, Count, Iters, Op, Var, walk_stmts
from semantics.mlir.dialect import SignalOp, WaitOp, context
from semantics.mlir.importer import import_text
from semantics.mlir.parse import Chunk, parse_chunk
from semantics.mlir.waits import parse_threshold

LOOP = """func.func @k(%A: memref<64xi32>, %lo: index, %hi: index, %st: index) {
  %a = memref.alloc() : memref<64xi32>
  scf.for %i = %lo to %hi step %st {
    "memref.copy"(%A, %a) : (memref<64xi32>, memref<64xi32>) -> ()
    "syncproof.signal"() {core = "DM"} : () -> ()
    "syncproof.wait"(%i, %lo, %st) {core = "COMPUTE", counter = "DM", threshold = "THRESHOLD",
                                    names = "i i_lo i_step"} : (index, index, index) -> ()
    "test.op"(%a) : (memref<64xi32>) -> ()
    SIGNAL
  } {syncproof.loop = "i"}
  func.return
}
"""


def _import(text: str):
    (case,) = import_text(text, "t.mlir")
    return case.program


def _waits(program):
    return {(s.name, w.engine): w.threshold for s in walk_stmts(program.body) if isinstance(s, Op) for w in s.waits}


DM_SIGNAL = '"syncproof.signal"() {core = "DM"} : () -> ()'
COMPUTE_SIGNAL = '"syncproof.signal"() {core = "COMPUTE"} : () -> ()'


def _loop(threshold: str, signal: str = f"{DM_SIGNAL}\n    {COMPUTE_SIGNAL}") -> str:
    """A loop with a runtime step: a copy (DM), then a global test.op (both cores)."""
    return LOOP.replace("THRESHOLD", threshold).replace("SIGNAL", signal)


def test_threshold_text_parses_as_the_kernel_expression():
    assert parse_threshold("3 * (iv // 16) + 2") == BinOp("+", BinOp("*", Const(3), BinOp("//", Var("iv"), Const(16))),
                                                        Const(2))
    assert parse_threshold("iters(j) - 1") == BinOp("-", Iters("j"), Const(1))


@pytest.mark.parametrize("threshold", ["3 +", "i ++ 1", "i\n1", "wait DM >= 1"])
def test_threshold_that_is_not_an_expression_is_refused(threshold):
    with pytest.raises(KernelError, match="not"):
        parse_threshold(threshold)


def _verify(op) -> str | None:
    try:
        op.verify()
    except Exception as err:  # xdsl's VerifyException
        return str(err)
    return None


def test_wait_op_verifies_only_when_names_match_operands_and_threshold_parses():
    module, _ = parse_chunk(Chunk(_loop("(i - i_lo) // i_step + 1"), 1, 1), "t.mlir", context())
    waits = [op for op in module.walk() if isinstance(op, WaitOp)]
    signals = [op for op in module.walk() if isinstance(op, SignalOp)]
    assert len(waits) == 1 and len(signals) == 3
    assert _verify(waits[0]) is None
    with pytest.raises(KernelError, match="names 2 operands"):
        import_text(_loop("1").replace('names = "i i_lo i_step"', 'names = "i i_lo"'), "t.mlir")
    with pytest.raises(KernelError, match="not a kernel-language expression"):
        import_text(_loop("i +"), "t.mlir")


def test_generic_text_parses_back_to_the_same_text():
    from xdsl.printer import Printer
    import io

    def printed(text):
        module, _ = parse_chunk(Chunk(text, 1, 1), "t.mlir", context())
        out = io.StringIO()
        Printer(stream=out, print_generic_format=True).print_op(module)
        return out.getvalue()

    once = printed(_loop("i + 1"))
    assert '"syncproof.wait"(%i, %lo, %st) {core = "COMPUTE", counter = "DM", threshold = "i + 1", ' \
           'names = "i i_lo i_step"}' in once
    assert printed(once) == once


def test_waits_import_over_the_trip_index_of_a_runtime_step_loop():
    """%i = lo + st * t, so (i - i_lo) // i_step is the trip index t exactly (steps are
    positive); any other quotient keeps its division."""
    exact = _waits(_import(_loop("(i - i_lo) // i_step + 1")))
    loop_var = next(s.var for s in walk_stmts(_import(_loop("1")).body) if hasattr(s, "var"))
    assert exact[("test_op_a_COMPUTE", "DM")] == BinOp("+", Var(loop_var), Const(1))
    inexact = _waits(_import(_loop("(i - i_lo + 1) // i_step")))[("test_op_a_COMPUTE", "DM")]
    assert any(isinstance(n, BinOp) and n.op == "//" for n in _walk(inexact))


def _walk(node):
    from semantics.ir import walk_expr

    return list(walk_expr(node))


def test_iters_follows_the_marked_loop_and_unknown_names_are_refused():
    marked = _waits(_import(_loop("iters(i)")))[("test_op_a_COMPUTE", "DM")]
    assert isinstance(marked, Iters)
    with pytest.raises(KernelError, match=r"iters\(j\)"):
        _import(_loop("iters(j)"))
    with pytest.raises(KernelError, match="'nope'"):
        _import(_loop("nope + 1"))


def test_wait_of_another_core_and_misplaced_waits_are_refused():
    with pytest.raises(KernelError, match="syncproof.wait of core XX guards 'test.op', which runs on DM and COMPUTE"):
        _import(_loop("1").replace('core = "COMPUTE", counter', 'core = "XX", counter'))
    moved = _loop("1", signal="").replace('    "test.op"(%a) : (memref<64xi32>) -> ()\n', "")
    with pytest.raises(KernelError, match="a wait must come right before the op it guards"):
        _import(moved)


def test_a_core_whose_counter_is_read_must_signal_after_each_of_its_ops():
    with pytest.raises(KernelError, match="'memref.copy' runs on DM, .* no syncproof.signal of DM"):
        _import(_loop("1").replace(DM_SIGNAL, "", 1))
    with pytest.raises(KernelError, match="'test.op' runs on DM, .* no syncproof.signal of DM"):
        _import(_loop("1", signal=COMPUTE_SIGNAL))
    # COMPUTE's counter is read by no wait: its signal may be missing
    assert _waits(_import(_loop("1", signal=DM_SIGNAL)))
    with pytest.raises(KernelError, match="does not follow an op of that core"):
        _import(_loop("1", signal=f"{DM_SIGNAL}\n    {DM_SIGNAL}"))


def test_count_names_a_core_and_imports_as_the_engine_count():
    assert parse_threshold("count(DM) - 1") == BinOp("-", Count("DM"), Const(1))
    imported = _waits(_import(_loop("count(DM)")))[("test_op_a_COMPUTE", "DM")]
    assert imported == Count("DM")
    with pytest.raises(KernelError, match=r"count\(XX\): unknown engine 'XX'"):
        _import(_loop("count(XX) + 1"))
