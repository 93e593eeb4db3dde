"""`sync --emit mlir` writes thresholds over the loops' real induction variables, not
the trip index: for kernels/snax/tiled_add.mlir a threshold `3 * t + 2` over the trip
index t = 0..7 of `scf.for %iv = 0 to 128 step 16` must be written over `iv`.

The test runs the emitted MLIR: a small interpreter walks it with concrete values
(constants, index arithmetic, scf.for, scf.if), evaluates each `syncproof.wait`
threshold with its operands bound by `names`, and compares the sequence of waits,
in execution order, with the waits of the synchronized kernel unrolled (the imported
program's thresholds at the trip index)."""

import re
from pathlib import Path

import pytest

from algorithm.registry import get_strategy, sync_threshold
from algorithm.threshold.options import PlannerOptions
from semantics.evaluate import eval_expr
from semantics.ir import count_key
from semantics.mlir.emit import emit
from semantics.mlir.parse import op_name, parse_chunk, prop, split_cases
from semantics.parser import parse
from semantics.sequential import unroll
from verify.cli.mlir import load_imported

ROOT = Path(__file__).parents[3]
KERNELS = sorted((ROOT / "kernels" / "snax").glob("*.mlir"))
_ARITH = {"arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
          "arith.divui": lambda a, b: a // b, "arith.divsi": lambda a, b: a // b,
          "arith.remui": lambda a, b: a % b, "arith.remsi": lambda a, b: a % b,
          "arith.maxsi": max, "arith.minsi": min, "arith.maxui": max, "arith.minui": min}
_CMP = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b, 3: lambda a, b: a <= b,
        4: lambda a, b: a > b, 5: lambda a, b: a >= b, 6: lambda a, b: a < b, 7: lambda a, b: a <= b,
        8: lambda a, b: a > b, 9: lambda a, b: a >= b}


def _value(prop_value):
    return getattr(getattr(prop_value, "value", None), "data", None)


def run_emitted(text: str) -> list[tuple[str, str, int]]:
    """(core, counter, threshold value) of every syncproof.wait, in execution order."""
    module, _ = parse_chunk(split_cases(text)[0], "emitted.mlir")
    env: dict = {}
    started: dict = {}  # loop name (syncproof.loop) -> iterations started so far (iters)
    signals: dict = {}  # core -> its syncproof.signal ops executed so far (count(core))
    waits: list = []

    def block(blk):
        for op in blk.ops:
            name = op_name(op)
            if name == "arith.constant" and isinstance(_value(prop(op, "value")), int):
                env[op.results[0]] = _value(prop(op, "value"))
            elif name in _ARITH and all(v in env for v in op.operands):
                env[op.results[0]] = _ARITH[name](*(env[v] for v in op.operands))
            elif name in ("arith.index_cast", "arith.extsi", "arith.extui") and op.operands[0] in env:
                env[op.results[0]] = env[op.operands[0]]
            elif name == "arith.cmpi" and all(v in env for v in op.operands):
                env[op.results[0]] = int(_CMP[_value(prop(op, "predicate"))](*(env[v] for v in op.operands)))
            elif name == "syncproof.wait":
                names = str(op.attributes["names"].data).split() if "names" in op.attributes else []
                values = {n: env[v] for n, v in zip(names, op.operands)}
                threshold = parse_threshold(op.attributes["threshold"].data, names, list(started))
                tracked = {**started, **{count_key(core): n for core, n in signals.items()}}
                waits.append((op.attributes["core"].data, op.attributes["counter"].data,
                              eval_expr(threshold, values, tracked)))
            elif name == "syncproof.signal":
                core = op.attributes["core"].data
                signals[core] = signals.get(core, 0) + 1
            elif name == "scf.for":
                lo, hi, step = (env[v] for v in op.operands[:3])
                arg, loop = op.regions[0].blocks[0].args[0], op.attributes["syncproof.loop"].data
                for iv in range(lo, hi, step):
                    env[arg] = iv
                    started[loop] = started.get(loop, 0) + 1
                    block(op.regions[0].blocks[0])
            elif name == "scf.if":
                taken = op.regions[0] if env[op.operands[0]] else op.regions[1]
                if taken.blocks:
                    block(taken.blocks[0])
            else:
                for region in op.regions:
                    for inner in region.blocks:
                        block(inner)

    for region in module.regions:
        for blk in region.blocks:
            block(blk)
    return [w for w in waits if w[2] > 0]  # a wait for <= 0 completions always holds


def parse_threshold(text: str, names: list[str], loops: list[str]):
    """A kernel-language expression over `names` and `iters` of `loops`, parsed as the
    threshold of a one-op kernel."""
    names = list(dict.fromkeys(names + loops))
    counters = sorted(set(re.findall(r"count\((\w+)\)", text)))  # count(core): the core's signals so far
    program = parse(f"engines {' '.join(['A', *counters])}\n" + "".join(f"for {n} in 0..1 {{\n" for n in names)
                    + f"A op wait A >= {text}\n" + "}\n" * len(names))
    body = program.body
    for _ in names:
        body = body[0].body
    return body[0].waits[0].threshold


def kernel_waits(program) -> list[tuple[str, str, int]]:
    """The same sequence from the synchronized kernel: per instance, per (core, counter),
    the largest threshold, sorted as emit sorts them."""
    out = []
    for instance in unroll(program, {}).instances:
        engines = program.engines
        best: dict = {}
        for engine, value in instance.waits:
            key = (engines[instance.engine], engines[engine])
            best[key] = max(best.get(key, value), value)
        out += [(core, counter, value) for (core, counter), value in sorted(best.items()) if value > 0]
    return out


def _cases():
    for path in KERNELS:
        imported = load_imported(str(path))
        if imported.program.params:
            continue  # the interpreter needs every loop bound to be a constant
        yield pytest.param(path, id=path.stem)


@pytest.mark.parametrize("path", list(_cases()))
@pytest.mark.parametrize("strategy", ["threshold"])
def test_emitted_thresholds_equal_the_kernel_thresholds_at_every_iteration(path, strategy):
    imported = load_imported(str(path))
    synced = get_strategy(strategy)(imported.program).program
    expected = kernel_waits(synced)
    assert expected, "the kernel has waits: the test compares something"
    assert run_emitted(emit(imported, synced)) == expected


def test_tiled_add_threshold_names_the_induction_variable():
    """The regression in words: %iv steps by 16, so the trip index is iv // 16. (Planned
    with closed-form thresholds only: against count(DM) the wait names no loop index.)"""
    imported = load_imported(str(ROOT / "kernels" / "snax" / "tiled_add.mlir"))
    synced = sync_threshold(imported.program, options=PlannerOptions(count_registers=False)).program
    out = emit(imported, synced)
    assert 'threshold = "3 * iv + 2"' not in out
    assert '"syncproof.wait"(%iv) {core = "COMPUTE", counter = "DM", threshold = "3 * (iv // 16) + 2", ' \
           'names = "iv"}' in out
