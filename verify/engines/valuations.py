"""The loop every per-valuation engine shares: valuations smallest first, the first
valuation showing the most severe verdict, a stop at the first unsound one, budgets,
progress, and fan-out of the valuations (verify/fanout.py) with the serial answer.

Fanned out, the valuations travel in batches sized by their instance counts (counted
without unrolling, `semantics.sequential.count_instances`): light valuations share a
task, so a task's cost outweighs its round trip; a heavy one goes alone, so the
workers stay evenly loaded. The program goes to each worker once, and each worker
compiles its expressions once (docs/happens-before.md, "Fan-out")."""

from __future__ import annotations

import math

import attrs

from semantics.compiled import compiler
from semantics.errors import SyncproofError
from semantics.ir import Program
from semantics.registers import inline_registers
from semantics.sequential import UnrollLimit, count_instances, unroll

from verify.engines.witness import range_check
from verify.fanout import SERIAL, FanOut, PerWorkers, batched, ordered_map
from verify.verdicts import SEVERITY, CheckOptions, CheckResult, ValuationResult, Verdict, Witness, finalise


def valuations(bounds: tuple[tuple[str, int, int], ...]) -> "Valuations":
    """Every valuation within inclusive bounds, smallest sum first (small witnesses first)."""
    return Valuations(tuple(bounds))


@attrs.frozen
class Valuations:
    """The valuations within inclusive bounds, by sum then lexicographically, made one
    at a time: four parameters in 0..40 are 2.8 million, and sorting them first would take
    seconds that no time limit could stop."""

    bounds: tuple[tuple[str, int, int], ...]

    @property
    def size(self) -> int:
        """How many there are (an int of any size; len() too when it fits)."""
        return math.prod(max(0, hi - lo + 1) for _, lo, hi in self.bounds)

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        if self.size == 0:
            return
        names = [name for name, _, _ in self.bounds]
        los = [lo for _, lo, _ in self.bounds]
        his = [hi for _, _, hi in self.bounds]
        for total in range(sum(los), sum(his) + 1):
            for combo in _with_sum(los, his, total):
                yield dict(zip(names, combo))


def _with_sum(los: list, his: list, total: int):
    """The tuples within [los, his] with this sum, in lexicographic order."""
    if not los:
        if total == 0:
            yield ()
        return
    rest_lo, rest_hi = sum(los[1:]), sum(his[1:])
    for first in range(max(los[0], total - rest_hi), min(his[0], total - rest_lo) + 1):
        for rest in _with_sum(los[1:], his[1:], total - first):
            yield (first,) + rest


def run_valuation(program: Program, decide, options: CheckOptions, time_left: float | None,
                  values: dict[str, int], on_progress=None, compiled=None):
    """Unroll and decide one valuation (in whatever process runs it). A kernel error is
    returned, not raised, so that it crosses process boundaries intact. `on_progress`
    (serial runs only: a callback does not cross processes) hears of long valuations.
    `compiled`: a `semantics.compiled.compiler()` shared by the valuations of `program`
    (serial runs only): compiling the kernel's expressions again for each of
    matmul_fully_optimized's 4,096 valuations was a third of its bounded check."""
    deadline = options.clock() + time_left if time_left is not None else None
    try:
        unrolled = unroll(program, values, limit=options.max_states, compiled=compiled)
    except UnrollLimit as limit:
        return ValuationResult(Verdict.UNKNOWN, 0, None, frozenset(), reason=f"instance limit: {limit}")
    except SyncproofError as err:
        return err
    return range_check(unrolled) or decide(unrolled, options, deadline, on_progress)


# Batches: about this many per worker (the last batch to finish bounds the run, so
# many small ones balance better), none lighter than MIN_BATCH instances (a task's
# round trip then costs a few percent of its work) and none heavier than MAX_BATCH
# (about a second's work: results, progress and Ctrl-C come at least that often, even
# when the bounds hold millions of instances). A valuation's fixed cost is counted as
# VALUATION_COST instances.
BATCHES_PER_WORKER = 16
MIN_BATCH = 4_000
MAX_BATCH = 100_000
VALUATION_COST = 32


def instance_weight(program: Program, values: dict[str, int], limit: int) -> int:
    """A valuation's cost estimate: its instance count, counted without unrolling. An
    error is not raised here (batches are made ahead of the results): the valuation's
    own unrolling reports it, in its turn."""
    try:
        counted = count_instances(program, values, limit)
    except UnrollLimit:
        return limit
    except SyncproofError:
        return VALUATION_COST
    return (counted or 0) + VALUATION_COST


def batch_target(program: Program, all_valuations: "Valuations", limit: int, workers: int) -> int:
    """How heavy a batch may be: about total / (BATCHES_PER_WORKER * workers) instances,
    at most MAX_BATCH and at least MIN_BATCH, the total estimated from the smallest and
    largest valuations."""
    lows = {name: lo for name, lo, _ in all_valuations.bounds}
    highs = {name: hi for name, _, hi in all_valuations.bounds}
    total = all_valuations.size * (instance_weight(program, lows, limit) + instance_weight(program, highs, limit)) // 2
    return max(MIN_BATCH, min(MAX_BATCH, total // (BATCHES_PER_WORKER * workers)))


def valuation_batches(program: Program, all_valuations: "Valuations", limit: int, workers: int):
    """The valuations, in order, in batches of at most `batch_target` instances (a
    heavier valuation alone), each weighed as it is batched."""
    if all_valuations.size == 0:
        return iter(())
    target = batch_target(program, all_valuations, limit, workers)
    return batched(all_valuations, lambda values: instance_weight(program, values, limit), target)


# In a worker: the program whose expressions it compiled last, and that compiler.
_worker_compiled: tuple = (None, None)


def run_batch(shared: tuple, batch: tuple[dict[str, int], ...]) -> list:
    """run_valuation for each valuation of `batch` (in a worker; `shared`: the program,
    decide, options and time left). It stops after an unsound valuation or an error (the
    caller stops there), and once the time left is spent, with None last (the caller
    then reports the time limit)."""
    global _worker_compiled
    program, decide, options, time_left = shared
    if _worker_compiled[0] is not program:
        _worker_compiled = (program, compiler())
    compiled = _worker_compiled[1]
    deadline = None if time_left is None else options.clock() + time_left
    results: list = []
    for number, values in enumerate(batch):
        left = None if deadline is None else max(0.0, deadline - options.clock())
        result = run_valuation(program, decide, options, left, values, None, compiled)
        results.append(result)
        if isinstance(result, Exception) or Verdict.UNSOUND in result.findings:
            break
        if deadline is not None and options.clock() > deadline and number + 1 < len(batch):
            results.append(None)
            break
    return results


def _flattened(batches):
    """The results of the batches, one by one; closing this closes `batches`."""
    try:
        for results in batches:
            yield from results
    finally:
        batches.close()


def _shown(values: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "no parameters"


def check_valuations(program: Program, bounds: tuple[tuple[str, int, int], ...], options: CheckOptions,
                     decide, engine: str, fan_out: FanOut | None = None) -> CheckResult:
    """Check every valuation within `bounds` with `decide(unrolled, options, deadline,
    on_progress)`.
    The result is the same for every `fan_out`. Loop registers are read by their values
    (semantics/registers.py), replaced once here: every valuation, on every worker,
    unrolls and compiles the same register-free program."""
    program = inline_registers(program)
    fan_out = fan_out or SERIAL
    start = options.clock()
    deadline = start + options.timeout if options.timeout else None
    all_valuations = valuations(bounds)
    unit = "states" if engine == "explicit" else "events"
    total_states, done = 0, 0
    worst: Verdict = Verdict.BISIMILAR
    witness: Witness | None = None
    unknown_reason = None
    quiet = attrs.evolve(options, progress=None)

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - options.clock())

    def serial():  # lazily, so a stop after one valuation runs no more; each gets the time left
        compiled = compiler()
        for number, values in enumerate(all_valuations):
            def inside(states, number=number, values=values):
                options.progress(f"valuation {number + 1}/{all_valuations.size} ({_shown(values)}), "
                                 f"{total_states + states} {unit}")
            if options.progress:
                inside(0)
            yield run_valuation(program, decide, quiet, left(), values, inside if options.progress else None,
                                compiled)

    if fan_out.serial:
        results = serial()
    else:
        def sized(workers: int):
            if options.progress:
                options.progress(f"sizing the batches of {all_valuations.size} valuations for {workers} "
                                 f"worker{'' if workers == 1 else 's'}")
            return valuation_batches(program, all_valuations, options.max_states, workers)
        results = _flattened(ordered_map(run_batch, PerWorkers(sized), fan_out,
                                         shared=(program, decide, quiet, left()), progress=options.progress))
    try:
        for number, (values, result) in enumerate(zip(all_valuations, results)):
            if result is None:  # a batch ran out of time (run_batch)
                unknown_reason = "time limit reached"
                break
            if isinstance(result, Exception):
                raise result
            total_states += result.states
            done += 1
            for found in result.findings:
                if SEVERITY[found] > SEVERITY[worst]:
                    worst, witness = found, result.witness
            now = options.clock()
            if options.progress:  # the caller throttles (verify/progress.py)
                options.progress(f"valuation {number + 1}/{all_valuations.size} ({_shown(values)}), "
                                 f"{total_states} {unit}")
            if result.verdict == Verdict.UNKNOWN:
                # A valuation that ran into the command's time limit says so as every
                # engine does; any other unknown names its valuation.
                unknown_reason = result.reason if result.reason == "time limit reached" else \
                    f"{result.reason} at {_shown(values)}"
                if deadline is not None and now > deadline:
                    break
            elif deadline is not None and now > deadline and number + 1 < all_valuations.size:
                unknown_reason = "time limit reached"
                break
            if worst == Verdict.UNSOUND:
                break
    finally:
        close = getattr(results, "close", None)
        if close:
            close()
    complete = unknown_reason is None and (done == all_valuations.size or worst == Verdict.UNSOUND)
    verdict, holds = finalise(worst, complete, options.property)
    return CheckResult(
        verdict=verdict, holds=holds, property=options.property, engine=engine, bounds=bounds,
        states=total_states, valuations=done, total_valuations=all_valuations.size,
        witness=witness, complete=complete, reason=unknown_reason,
    )
