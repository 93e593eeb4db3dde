"""Loop registers (`for v in lo..hi with r = init step s`, docs/language.md): their text
round trip, every static error as `FILE:LINE:COL: error:`, and their meaning.

The meaning is a substitution (semantics/registers.py `inline_registers`: each read of
`r` becomes `init + s * (v - lo)`), which every checker reads. These tests hold it to
the operational meaning, what an engine does with a register: set it to `init` when the
loop is entered, add `s` at each back-edge (tests/support/registers.py
`operational_thresholds`, written without semantics/registers.py). At every op instance
the two give the same threshold values, on hand-written kernels and on generated ones
with random registers; an inline that ignores `lo` or drops the step is caught.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import semantics.registers as registers
from semantics.errors import KernelError
from semantics.ir import BinOp, Const, For, Var, walk_stmts
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from semantics.registers import has_registers, inline_registers
from semantics.sequential import unroll
from semantics.validate import validate
from verify.search.generators import programs
from verify.search.rich import rich_programs

from tests.support.corpus import DATA_DIR, ROOT
from tests.support.registers import (
    COUNTED, NESTED_DYNAMIC, SHIFTED, WRONG, WRONG_BEYOND_BOUNDS, operational_thresholds, with_registers,
)

KERNELS = {"nested_dynamic": NESTED_DYNAMIC, "shifted": SHIFTED, "counted": COUNTED,
           "beyond_bounds": WRONG_BEYOND_BOUNDS, **{f"wrong_{k}": text for k, (text, _) in WRONG.items()}}

# One kernel per static error of loop registers, with the error each must give
# (tests/semantics/test_errors.py runs them through `syncproof check` as well).
ERROR_FILES = {
    "register_in_index": "register 'r' is not readable here",
    "register_in_loop_bound": "register 'r' is not readable here",
    "register_in_latency": "register 'r' is not readable here",
    "register_in_condition": "register 'r' is not readable here",
    "register_in_flag_id": "register 'r' is not readable here",
    "register_iters_of_own_loop": "iters(i) changes while the register's loop runs",
    "register_iters_of_inner_loop": "iters(j) changes while the register's loop runs",
    "register_count_of_engine_inside": "count(A) changes while the register's loop runs",
    "register_count_of_queue_inside": "count(q) changes while the register's loop runs",
    "register_declared_twice": "register 'r' is declared twice",
    "register_named_like_parameter": "register 'M' has the name of a parameter",
    "register_named_like_loop_variable": "register 'j' has the name of a loop variable",
    "register_read_outside_its_loop": "register 'r' is not readable here",
    "register_reads_sibling_register": "register 'r' is not readable here",
    "register_reads_own_loop_variable": "loop variable 'i' is not in scope here",
}
_HEADER = re.compile(r"^# error: (?P<line>\d+):(?P<col>\d+): ")


def _loopy(program) -> bool:
    return any(isinstance(s, For) for s in walk_stmts(program.body))


# Generated kernels with at least one loop (a register needs one).
GENERATED = programs(synced=True, max_depth=3).filter(_loopy)
RICH = rich_programs(max_depth=2).filter(_loopy)


def _valuations(program, hi: int = 2):
    """Every valuation with each parameter in lower..max(hi, lower)."""
    out = [{}]
    for p in program.params:
        out = [{**v, p.name: x} for v in out for x in range(p.lower, max(hi, p.lower) + 1)]
    return out


def _substituted(program, values) -> list:
    """The thresholds `unroll` evaluates (it reads the program with registers inlined), in
    the shape of `operational_thresholds`: a DMA op's waits are its trigger's."""
    return [(i.op.name, i.env, tuple(t for _, t in i.waits)) for i in unroll(program, values).instances
            if i.trigger < 0]


def _agree(program, hi: int = 2) -> None:
    """At every valuation and op instance: the operational register values give the
    thresholds that the inlined program gives, evaluated independently and by `unroll`."""
    inlined = inline_registers(program)
    assert not has_registers(inlined)
    for values in _valuations(program, hi):
        operational = operational_thresholds(program, values)
        assert operational == operational_thresholds(inlined, values), values
        assert operational == _substituted(program, values), values


# ---------------------------------------------------------------- text


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_kernel_with_registers_prints_and_parses_back_to_itself(name):
    program = parse(KERNELS[name])
    assert has_registers(program)
    text = print_program(program)
    assert parse(text) == program
    assert print_program(parse(text)) == text  # the canonical form is a fixed point


def test_the_printer_writes_each_register_as_declared():
    loops = [s for s in walk_stmts(parse(NESTED_DYNAMIC).body) if isinstance(s, For)]
    assert [[(r.name, r.init, r.step) for r in loop.registers] for loop in loops] == [
        [("w", parse_expr("-1"), Const(1)), ("s", Const(0), Var("M"))],
        [("f", Var("s"), Const(1))],
    ]
    assert "for i in 0..N with w = -1 step 1, s = 0 step M {" in print_program(parse(NESTED_DYNAMIC))
    assert "for j in 0..M with f = s step 1 {" in print_program(parse(NESTED_DYNAMIC))


def parse_expr(text: str):
    """An expression as the parser builds it (a threshold of a one-op kernel)."""
    program = parse(f"engines A B\nA a wait B >= {text}\n")
    return program.body[0].waits[0].threshold


@settings(max_examples=40)
@given(st.data())
def test_generated_kernels_with_registers_print_and_parse_back(data):
    program = data.draw(with_registers(data.draw(GENERATED)))
    assert parse(print_program(program)) == program


# ---------------------------------------------------------------- static errors


def test_every_register_error_has_its_kernel():
    present = {p.stem for p in (DATA_DIR / "errors").glob("register_*.sync")}
    assert present == set(ERROR_FILES)


@pytest.mark.parametrize("name", sorted(ERROR_FILES))
def test_a_register_error_is_reported_at_its_location(name):
    path = DATA_DIR / "errors" / f"{name}.sync"
    rel = path.relative_to(ROOT).as_posix()
    header = _HEADER.match(path.read_text().splitlines()[0])
    with pytest.raises(KernelError) as caught:
        parse_file(rel)
    rendered = caught.value.render()
    assert rendered.startswith(f"{rel}:{header['line']}:{header['col']}: error: "), rendered
    assert ERROR_FILES[name] in rendered


def test_registers_are_readable_in_inner_loops_and_inner_headers():
    validate(parse(SHIFTED))  # q's header reads base; the inner loop's waits read ld
    validate(parse(NESTED_DYNAMIC))


# ---------------------------------------------------------------- the substitution


def test_a_program_without_registers_is_its_own_inlined_program():
    program = parse((ROOT / "kernels" / "nested_dynamic.sync").read_text())
    assert inline_registers(program) is program


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_inlined_program_is_valid_and_has_no_registers(name):
    inlined = inline_registers(parse(KERNELS[name]))
    assert not has_registers(inlined)
    validate(inlined)
    assert parse(print_program(inlined)) == inlined


def test_the_register_kernel_waits_exactly_as_nested_dynamic_does():
    """NESTED_DYNAMIC is kernels/nested_dynamic.sync with its `iters(j)` and `i` forms
    read from registers: every instance gets the same thresholds."""
    original = parse((ROOT / "kernels" / "nested_dynamic.sync").read_text())
    with_regs = parse(NESTED_DYNAMIC)
    for values in _valuations(original, 3):
        assert operational_thresholds(with_regs, values) == operational_thresholds(original, values), values


# ---------------------------------------------------------------- operational meaning


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_operational_register_values_give_the_substituted_thresholds(name):
    _agree(parse(KERNELS[name]), hi=3)


def test_the_operational_values_of_a_shifted_loop_by_hand():
    # i in 1..3 (N = 2), j in 2..4 (K = 2): base = -2 + 2 (i - 1), q = base + 1 + (j - 2)
    rows = [(name, env, t) for name, env, t in operational_thresholds(parse(SHIFTED), {"N": 2, "K": 2})
            if name == "mm"]
    assert rows == [
        ("mm", (("i", 1), ("j", 2)), (3, -1)), ("mm", (("i", 1), ("j", 3)), (3, 0)),
        ("mm", (("i", 2), ("j", 2)), (4, 1)), ("mm", (("i", 2), ("j", 3)), (4, 2)),
    ]


@settings(max_examples=60)
@given(st.data())
def test_operational_meaning_equals_substitution_on_generated_kernels(data):
    program = data.draw(with_registers(data.draw(GENERATED)))
    _agree(program)


@settings(max_examples=30)
@given(st.data())
def test_operational_meaning_equals_substitution_on_rich_kernels(data):
    """Ranges, DMA queues (count of a queue in a header), lower bounds, ifs."""
    program = data.draw(with_registers(data.draw(RICH)))
    _agree(program)


# ---------------------------------------------------------------- teeth


def _ignoring_lower_bound(register, loop):
    """The broken value `init + step * v` (not `v - lo`)."""
    if register.step is None:
        return register.init
    return BinOp("+", register.init, BinOp("*", register.step, Var(loop.var)))


def _without_step(register, loop):
    """The broken value `init`: the register never advances."""
    return register.init


@pytest.mark.parametrize("broken", [_ignoring_lower_bound, _without_step])
def test_the_comparison_catches_a_broken_inline_on_the_shifted_kernel(monkeypatch, broken):
    monkeypatch.setattr(registers, "register_value", broken)
    with pytest.raises(AssertionError):
        _agree(parse(SHIFTED))


@pytest.mark.parametrize("broken", [_ignoring_lower_bound, _without_step])
def test_the_generated_property_catches_a_broken_inline(monkeypatch, broken):
    monkeypatch.setattr(registers, "register_value", broken)
    assert _property_fails_on(GENERATED), f"{broken.__name__}: no generated kernel showed the broken inline"


def _property_fails_on(kernels) -> bool:
    """Whether the generated-kernel property fails within its ci budget (no shrinking:
    only that it fails matters here)."""
    @settings(max_examples=60, database=None, derandomize=True, phases=[Phase.generate])
    @given(st.data())
    def prop(data):
        _agree(data.draw(with_registers(data.draw(kernels))))

    try:
        prop()
    except AssertionError:
        return True
    return False
