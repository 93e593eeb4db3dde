"""Python-side savings of the planner change no answer (docs/planner.md, "Speed").

- The redundancy proof's chain steps (algorithm/threshold/irredundant.py `ChainSteps`)
  are built once per plan: the Z3 queries the pass asks, and the output, are the same
  as when every query builds its own steps. The differential test is shown to catch a
  memo keyed too coarsely.
- A redundancy proof reads its chains only as far as the sampled points need (the first
  part covering each point): every proof gets the same answer, and the plan the same
  output, as when the whole chain is computed first, with fewer chain nodes counted.
- Strategies run with no automatic garbage collection, and kernels parse and print with
  fewer (semantics/collector.py); the collector's settings are the caller's again
  afterwards, on errors too.
"""

from __future__ import annotations

import gc
import importlib
import itertools

import pytest
import z3

from algorithm.registry import get_strategy
from semantics.collector import YOUNG_THRESHOLD, collections_off, fewer_collections
from semantics.ir import Const, Var
from semantics.errors import KernelError
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from tests.support.corpus import KERNELS_DIR
from tests.support.observe import observing

irredundant_mod = importlib.import_module("algorithm.threshold.irredundant")

# Kernels whose redundancy proofs follow chains of several hops (waits dropped or tried).
CHAIN_KERNELS = ["suite/softmax.sync", "suite/swiglu_mlp.sync", "six_engine_block.sync",
                 "suite/rmsnorm.sync", "if_else_split.sync"]


class _Unshared(irredundant_mod.ChainSteps):
    """The reference: every call builds its steps afresh (what each query did before)."""

    def following(self, name, condition, values):
        for s in self.sources(name):
            yield (s.site, irredundant_mod.And(condition, irredundant_mod.subst(s.condition, values)),
                   {k: irredundant_mod.subst(v, values) for k, v in s.values.items()})


class _KeyedByName(irredundant_mod.ChainSteps):
    """Deliberately broken: steps remembered by op name only (ignores the instance)."""

    def following(self, name, condition, values):
        cache = self.__dict__.setdefault("by_name", {})
        if name not in cache:
            cache[name] = list(_Unshared.following(self, name, condition, values))
        yield from cache[name]


def _queries_and_output(path, steps_class, monkeypatch):
    """Every Z3 check the threshold strategy makes (assertion count, answer) in order,
    and the printed output, with `steps_class` as the chain-step memo. The resource
    units a check takes are left out: they move with the ids of terms made earlier in
    the context, which the memo is free to change. z3's Solver.check is watched
    (tests/support/observe.py), not patched."""
    monkeypatch.setattr(irredundant_mod, "ChainSteps", steps_class)
    asked = []

    def check(event, local, result):
        if event != "call":
            asked.append((len(local["self"].assertions()), str(result)))

    program = parse_file(str(KERNELS_DIR / path))
    with observing({z3.Solver.check: check}):
        output = print_program(get_strategy("threshold")(program).program)
    monkeypatch.undo()
    return asked, output


@pytest.mark.parametrize("kernel", CHAIN_KERNELS)
def test_chain_step_memo_asks_the_same_queries_and_gives_the_same_output(kernel, monkeypatch):
    shared = _queries_and_output(kernel, irredundant_mod.ChainSteps, monkeypatch)
    unshared = _queries_and_output(kernel, _Unshared, monkeypatch)
    assert shared[0] == unshared[0]
    assert shared[1] == unshared[1]


def test_teeth_a_chain_step_memo_keyed_by_op_only_is_caught(monkeypatch):
    differs = []
    for kernel in CHAIN_KERNELS:
        broken = _queries_and_output(kernel, _KeyedByName, monkeypatch)
        reference = _queries_and_output(kernel, _Unshared, monkeypatch)
        differs.append(broken != reference)
    assert any(differs)


def test_chain_steps_are_built_once_and_only_as_far_as_read():
    calls, built = [], []

    class Source:
        def __init__(self, k):
            self.site, self.values = f"site{k}", {"i": Var("j")}

        @property
        def condition(self):  # read once per step built
            built.append(self.site)
            return Var("i")

    def sources(name):
        calls.append(name)
        return [Source(k) for k in range(3)]

    steps = irredundant_mod.ChainSteps(sources)
    values = {"j": Const(2)}
    first = next(steps.following("op", Var("c"), values))
    assert calls == ["op"]
    assert built == ["site0"]  # only the step read
    again = list(steps.following("op", Var("c"), values))
    assert again[0] is first  # the same objects: later lookups hit by identity
    assert [s[0] for s in again] == ["site0", "site1", "site2"]
    assert again[1][2] == {"i": Const(2)}  # the instance's values substituted in
    assert list(steps.following("op", Var("c"), values))[2] is again[2]
    assert built == ["site0", "site1", "site2"]  # each step built once


def _whole_chain_first(*args):
    """The reference: every part of the chain computed before the first is read."""
    yield from list(_chain_parts(*args))


_chain_parts = irredundant_mod._chain_parts
# Kernels of the general stage (the closed stage proves no redundancy with Z3).
PROOF_KERNELS = ["suite/swiglu_mlp.sync", "suite/rmsnorm.sync", "if_else_split.sync", "suite/moe_blocks.sync",
               "suite/matmul_dynamic_k.sync", "suite/layernorm.sync"]


def _first_parts_only(*args):
    """Deliberately broken: a proof that reads no more than the chain's first parts."""
    yield from itertools.islice(_chain_parts(*args), 3)


_proves = irredundant_mod._proves


def _proof_run(path, monkeypatch, chain_parts=None):
    """(each redundancy proof's question and answer, the output, how many chain nodes'
    requirements were computed) of one plan. (The Z3 queries of the whole plan may
    differ: a requirement is a count, whose claims Z3's remembered models answer.)"""
    read, answers = [], []
    original = irredundant_mod._requirement
    monkeypatch.setattr(irredundant_mod, "_requirement", lambda *a: read.append(a[2].op.name) or original(*a))
    if chain_parts is not None:
        monkeypatch.setattr(irredundant_mod, "_chain_parts", chain_parts)

    def spy(ctx, requirement, useful, chains, y, entry, kept_engines, compiled):
        answer = _proves(ctx, requirement, useful, chains, y, entry, kept_engines, compiled)
        answers.append((y.op.name, entry.engine, tuple(sorted(kept_engines)), answer))
        return answer

    monkeypatch.setattr(irredundant_mod, "_proves", spy)
    program = parse_file(str(KERNELS_DIR / path))
    output = print_program(get_strategy("threshold")(program).program)
    monkeypatch.undo()
    return answers, output, len(read)


@pytest.mark.parametrize("kernel", PROOF_KERNELS)
def test_a_redundancy_proof_read_lazily_gives_the_same_answers_and_output(kernel, monkeypatch):
    lazy = _proof_run(kernel, monkeypatch)
    whole = _proof_run(kernel, monkeypatch, chain_parts=_whole_chain_first)
    assert lazy[0], "the kernel asks no redundancy proof"
    assert lazy[:2] == whole[:2]
    assert lazy[2] <= whole[2]


def test_a_redundancy_proof_read_lazily_counts_fewer_chain_nodes(monkeypatch):
    lazy = _proof_run("suite/moe_blocks.sync", monkeypatch)
    whole = _proof_run("suite/moe_blocks.sync", monkeypatch, chain_parts=_whole_chain_first)
    assert lazy[2] < whole[2]


def test_teeth_a_proof_that_stops_reading_early_is_caught(monkeypatch):
    assert any(_proof_run(kernel, monkeypatch, chain_parts=_first_parts_only)[:2]
               != _proof_run(kernel, monkeypatch, chain_parts=_whole_chain_first)[:2] for kernel in PROOF_KERNELS)


def _thresholds_seen_by(module_name: str, function: str, monkeypatch) -> list:
    """The collector's thresholds at each call of `module.function` (a spy)."""
    module = importlib.import_module(module_name)
    original = getattr(module, function)
    seen: list = []

    def spy(*args, **kwargs):
        seen.append(gc.get_threshold())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, function, spy)
    return seen


def test_no_automatic_collection_runs_while_a_strategy_plans(monkeypatch):
    """Only the planner's own collections (at fixed points) run inside a strategy,
    whatever the process allocated before it: when a cycle's Z3 terms are freed decides
    the ids Z3 gives later terms, and those ids order its search (semantics/collector.py).
    The caller's allocations bring the young generation to just under its threshold, so
    that a strategy that leaves automatic collection on is caught at once."""
    explicit = [0]
    real_collect = gc.collect

    def counted_collect(*args, **kwargs):
        explicit[0] += 1
        return real_collect(*args, **kwargs)

    inside = [False]
    seen: list = []

    def on_collection(phase, info):
        if phase == "start" and inside[0]:
            seen.append(info["generation"])

    pipeline = importlib.import_module("algorithm.threshold.pipeline")
    real_plan = pipeline.plan

    def plan(*args, **kwargs):
        try:
            return real_plan(*args, **kwargs)
        finally:
            # The window ends inside the strategy: once it gives the collector back, the
            # allocations it made may start a collection at once, outside the strategy.
            inside[0] = False

    program = parse_file(str(KERNELS_DIR / "suite" / "long_row_reduce.sync"))
    strategy = get_strategy("threshold")
    monkeypatch.setattr(gc, "collect", counted_collect)
    monkeypatch.setattr(pipeline, "plan", plan)
    saved = gc.get_threshold()
    try:
        gc.set_threshold(YOUNG_THRESHOLD, 2, 2)
        real_collect()
        held = [[] for _ in range(YOUNG_THRESHOLD - 200)]  # the caller's live objects
        gc.callbacks.append(on_collection)
        inside[0] = True
        strategy(program)
        inside[0] = False
        assert gc.isenabled() and gc.get_threshold() == (YOUNG_THRESHOLD, 2, 2)
        del held
    finally:
        inside[0] = False
        if on_collection in gc.callbacks:
            gc.callbacks.remove(on_collection)
        gc.set_threshold(*saved)
    assert len(seen) == explicit[0], f"{len(seen) - explicit[0]} automatic collections inside the strategy"


def test_collections_off_restores_the_callers_setting_on_error_and_when_nested():
    assert gc.isenabled()
    try:
        with pytest.raises(RuntimeError):  # noqa: SIM117 (the nesting is what is tested)
            with collections_off():
                with collections_off():
                    assert not gc.isenabled()
                assert not gc.isenabled()
                raise RuntimeError("a strategy fails")
        assert gc.isenabled()
        gc.disable()
        with collections_off():  # a caller that keeps it off keeps it off
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_fewer_collections_restores_on_error_and_when_nested():
    saved = gc.get_threshold()
    try:
        gc.set_threshold(500, 9, 9)
        with pytest.raises(RuntimeError):  # noqa: SIM117 (the nesting is what is tested)
            with fewer_collections():
                with fewer_collections():
                    assert gc.get_threshold() == (YOUNG_THRESHOLD, 9, 9)
                assert gc.get_threshold() == (YOUNG_THRESHOLD, 9, 9)
                raise RuntimeError("a strategy fails")
        assert gc.get_threshold() == (500, 9, 9)
        gc.set_threshold(10 * YOUNG_THRESHOLD, 9, 9)  # a caller's higher threshold is kept
        with fewer_collections():
            assert gc.get_threshold() == (10 * YOUNG_THRESHOLD, 9, 9)
    finally:
        gc.set_threshold(*saved)


def test_parsing_runs_with_fewer_collections_and_restores_them_on_errors(monkeypatch):
    seen = _thresholds_seen_by("semantics.parser", "validate", monkeypatch)
    saved = gc.get_threshold()
    try:
        gc.set_threshold(1234, 7, 8)
        parse("kernel k\nengines A\nA x writes b\n")
        assert gc.get_threshold() == (1234, 7, 8)
        with pytest.raises(KernelError):
            parse("kernel k\nengines A\nA x writes b[\n")
        assert gc.get_threshold() == (1234, 7, 8)
    finally:
        gc.set_threshold(*saved)
    assert seen == [(YOUNG_THRESHOLD, 7, 8)]


def test_printing_runs_with_fewer_collections_and_restores_them(monkeypatch):
    seen = _thresholds_seen_by("semantics.printer", "print_op", monkeypatch)
    program = parse_file(str(KERNELS_DIR / "pipeline_db.sync"))
    saved = gc.get_threshold()
    try:
        gc.set_threshold(1234, 7, 8)
        text = print_program(program)
        assert gc.get_threshold() == (1234, 7, 8)
    finally:
        gc.set_threshold(*saved)
    assert seen and all(t == (YOUNG_THRESHOLD, 7, 8) for t in seen)
    assert parse(text) == program
