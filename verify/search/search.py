"""Property-based counterexample search: generate kernels, synchronize them with a
strategy, verify, and shrink any failure to a smallest witness.

The generator is `verify.search.generators.programs` (unsynchronized kernels: the strategy
under test inserts the synchronization); Hypothesis drives the search and shrinks
toward fewer ops, loops, engines and smaller constants. Each candidate is checked by
the explicit engine within small parameter bounds. Only a definite failure counts:
an `unknown` check (a budget hit) is skipped and counted, never reported as a
witness and never as a pass. A strategy that rejects a kernel with a SyncproofError
(for example "no closed form") is counted as skipped, not as a failure; any other
exception from the strategy is a crash and is a finding.

`SearchOptions` holds every budget; `search` returns a `SearchResult` value.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from pathlib import Path

import attrs
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample, Unsatisfiable

from semantics.errors import LimitReached, SyncproofError
from semantics.ir import Program, Var, loops, ops
from semantics.printer import print_program
from verify.engines.explicit import check
from verify.fanout import SERIAL, FanOut, ordered_map
from verify.search.generators import param_bounds, programs
from verify.verdicts import CheckOptions, CheckResult, is_failure


@attrs.frozen
class SearchOptions:
    """Every budget and switch of a search, in one place."""

    strategy: str = "threshold"
    examples: int = 200  # generated kernels to try
    seed: int = 0
    property: str = "bisimulation"
    max_param: int = 2  # parameters range over 0..max_param in each check
    max_depth: int = 4  # loop nesting of generated kernels
    engines: tuple[int, int] = (2, 6)
    max_instances: int = 16  # per valuation, so that each check stays small
    max_states: int = 200_000  # per valuation; reaching it makes that example unknown (skipped)
    progress: Callable[[str], None] | None = None
    # A strategy function to use instead of the named one (tests use it for
    # deliberately broken strategies); `strategy` then only labels the results.
    sync: Callable[[Program], Program] | None = None


@attrs.frozen
class Finding:
    """A shrunk failing kernel and what fails on it."""

    program: Program  # the kernel before synchronization
    synced: Program | None  # the strategy's output (None when the strategy crashed)
    result: CheckResult | None  # the check of `synced` (None when the strategy crashed)
    crash: str | None = None  # the strategy's exception, when it crashed


@attrs.frozen
class SearchResult:
    finding: Finding | None
    examples: int  # kernels tried (shrinking included)
    skipped_unknown: int  # checks that hit a budget
    skipped_rejected: int  # kernels the strategy rejected with a SyncproofError
    largest_ops: int  # the largest kernel tried, in ops
    largest_program: Program | None
    seconds: float


def _check(program: Program, options: SearchOptions):
    """(synced, result, crash) for one kernel; result None when the strategy rejected it."""
    from algorithm.registry import get_strategy

    try:
        synced = options.sync(program) if options.sync else get_strategy(options.strategy)(program).program
    except LimitReached as exc:  # a limit that escaped its strategy: a finding, not a rejection
        return None, None, f"{type(exc).__name__}: {exc}"
    except SyncproofError:
        return None, None, None
    except Exception as exc:  # noqa: BLE001 - a crash of the strategy under test is a finding
        return None, None, f"{type(exc).__name__}: {exc}"
    bounds = param_bounds(program, options.max_param)
    result = check(synced, bounds, CheckOptions(property=options.property, max_states=options.max_states))
    return synced, result, None


def check_example(options: SearchOptions, program: Program):
    """One generated kernel's (synced, result, crash): a task of the fan-out."""
    return _check(program, options)


def _failed(checked, prop: str) -> bool:
    synced, result, crash = checked
    return crash is not None or (result is not None and result.holds is not None and is_failure(result.verdict, prop))


def _checked_ahead(strategy, config, options: SearchOptions, fan_out: FanOut) -> dict:
    """The checks of the kernels a serial search generates, up to its first failure, done
    on the fan-out. Hypothesis draws the same kernels from the same seed as long as every
    check passes, so generating with an always-passing test lists the serial run's
    kernels (and more, which the serial run would not have reached)."""
    drawn: list = []

    def collect(program: Program) -> bool:
        drawn.append(program)
        return False

    try:
        find(strategy, collect, settings=settings(config, phases=[Phase.generate]),
             random=random.Random(options.seed))
    except (NoSuchExample, Unsatisfiable):
        pass
    task = functools.partial(check_example, attrs.evolve(options, progress=None))
    known: dict = {}
    say = options.progress  # the caller throttles (verify/progress.py)
    if say:
        where = f"the cluster at {fan_out.cluster}" if fan_out.cluster else f"{fan_out.workers} worker processes"
        say(f"checking {len(drawn)} generated kernels ahead on {where}")
    results = ordered_map(task, drawn, fan_out, progress=say)
    try:
        for n, (program, checked) in enumerate(zip(drawn, results), 1):
            known[program] = checked
            if say:
                say(f"{n}/{len(drawn)} generated kernels checked ahead")
            if _failed(checked, options.property):
                break
    finally:
        results.close()
    return known


def search(options: SearchOptions = SearchOptions(), fan_out: FanOut = SERIAL) -> SearchResult:
    """Search for a kernel on which the strategy fails the property; shrink it. With a
    fan-out, the generated kernels are checked in parallel first; the search then runs
    as a serial one would (same kernels, same counts, same finding), shrinking serially."""
    from algorithm.registry import get_strategy

    if options.sync is None:
        get_strategy(options.strategy)  # unknown strategy: a usage error before any work
    start = time.monotonic()
    tally = {"examples": 0, "unknown": 0, "rejected": 0, "largest": 0}
    largest: list = [None]

    def fails(program: Program) -> bool:
        tally["examples"] += 1
        size = len(ops(program))
        if size > tally["largest"]:
            tally["largest"], largest[0] = size, program
        if options.progress:  # the caller throttles (verify/progress.py)
            options.progress(f"{tally['examples']} kernels tried, largest {tally['largest']} ops")
        synced, result, crash = known.get(program) or _check(program, options)
        if crash is not None:
            return True
        if result is None:
            tally["rejected"] += 1
            return False
        if result.holds is None:
            tally["unknown"] += 1
            return False
        return is_failure(result.verdict, options.property)

    strategy = programs(engines=options.engines, max_depth=options.max_depth, max_param=options.max_param,
                        max_instances=options.max_instances, max_statements=4)
    config = settings(max_examples=options.examples, database=None, deadline=None,
                      phases=[Phase.generate, Phase.shrink],
                      suppress_health_check=list(HealthCheck))
    known = {} if fan_out.serial else _checked_ahead(strategy, config, options, fan_out)
    try:
        found = find(strategy, fails, settings=config, random=random.Random(options.seed))
    except (NoSuchExample, Unsatisfiable):
        found = None
    finding = None
    if found is not None:
        # Shrinking keeps the generated `param` lines; one no expression names changes
        # nothing but the number of identical valuations.
        trimmed = without_unused_params(found)
        if trimmed != found and fails(trimmed):
            found = trimmed
        synced, result, crash = _check(found, options)
        finding = Finding(found, synced, result, crash)
    return SearchResult(finding, tally["examples"], tally["unknown"], tally["rejected"], tally["largest"],
                        largest[0], time.monotonic() - start)


def without_unused_params(program: Program) -> Program:
    """`program` without the parameters that none of its expressions names."""
    used: set = set()

    def visit(node):
        if isinstance(node, Var):
            used.add(node.name)
        elif isinstance(node, (tuple, list)):
            for item in node:
                visit(item)
        elif attrs.has(type(node)):
            for field in attrs.fields(type(node)):
                visit(getattr(node, field.name))

    visit(program.body)
    return attrs.evolve(program, params=tuple(p for p in program.params if p.name in used))


def program_summary(program: Program) -> str:
    return f"{len(ops(program))} ops, {len(loops(program))} loops, {len(program.engines)} engines"


def write_reproducer(finding: Finding, options: SearchOptions, out_dir: str | Path) -> tuple[Path, Path]:
    """Write the shrunk kernel (.sync) and a pytest file that replays the check; the
    test fails while the strategy still fails on the kernel."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"search_{options.strategy.replace('-', '_')}_seed{options.seed}"
    kernel = out / f"{stem}.sync"
    verdict = finding.result.verdict.value if finding.result is not None else "crash"
    header = (f"# found by: syncproof search --strategy {options.strategy} --examples {options.examples} "
              f"--seed {options.seed} --property {options.property}\n"
              f"# {options.strategy} output is {verdict} with parameters in 0..{options.max_param}\n")
    kernel.write_text(header + print_program(finding.program))
    test = out / f"test_{stem}.py"
    test.write_text(f'''"""Reproducer written by `syncproof search`: the {options.strategy} strategy on
{kernel.name} must satisfy {options.property} for parameters in 0..{options.max_param}.
It fails while the bug it found is present."""

from pathlib import Path

from algorithm.registry import get_strategy
from semantics.parser import parse
from verify.engines.explicit import check
from verify.fanout import SERIAL, FanOut, ordered_map
from verify.search.generators import param_bounds
from verify.verdicts import CheckOptions

KERNEL = Path(__file__).with_name({kernel.name!r})


def test_{stem}_holds():
    program = parse(KERNEL.read_text(), str(KERNEL))
    synced = get_strategy({options.strategy!r})(program).program
    result = check(synced, param_bounds(program, {options.max_param}), CheckOptions(property={options.property!r}))
    assert result.holds is True, (result.verdict, result.witness and result.witness.explanation)
''')
    return kernel, test
