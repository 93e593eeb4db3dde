"""The `simulate` and `bench` commands (docs/design.md section 6): timed runs of a kernel
under each strategy (verify/timing/scheduler.py), Perfetto traces, tables and plots."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from semantics.errors import EvalError, UsageError
from semantics.ir import Barrier, Program, walk_stmts
from verify.api.timing import MAX_INSTANCES, run, unroll_bounded  # noqa: F401 (timed runs: the API's)
from verify.cli import memory
from verify.cli.args import check_strategy, strategy_help
from verify.cli.display import progress_for
from verify.timing.scheduler import Failure, Profile, Timeline, load_profile, simulate

SUITE = Path(__file__).resolve().parents[2] / "kernels" / "suite"  # the repository's suite (an editable install)
BENCH_STRATEGIES = ("oracle", "threshold", "barrier", "flags", "tokens")
# .mlir kernels: SNAX's own pass, and SNAX's barriers in the file if any (manual)
SNAX_BENCH_STRATEGIES = ("oracle", "threshold", "barrier", "snax-barrier")
_VALUE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\d+)\s*$")


def add_parsers(sub) -> None:
    p = sub.add_parser("simulate", help="time a kernel under a strategy (or the oracle lower bound)")
    p.add_argument("file")
    p.add_argument("--strategy", default="threshold",
                   help=strategy_help(("oracle",)) + "; oracle: the reference timed with free synchronization")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter value (default: the kernel's `param N = default`)")
    p.add_argument("--profile", default="trainium", help="trainium (default), snax, or a path to a .toml profile")
    p.add_argument("--trace", metavar="OUT.json", help="write a Chrome/Perfetto trace (ui.perfetto.dev)")
    p.add_argument("--json", action="store_true")
    memory.add_argument(p)

    p = sub.add_parser("bench", help="time the kernel suite under every strategy")
    p.add_argument("kernels", nargs="*", metavar="KERNEL", help="kernel files (default: kernels/suite/*.sync)")
    p.add_argument("--profile", default="trainium")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter value for every kernel that declares NAME (default: each kernel's "
                        "`param N = default`)")
    p.add_argument("--out", metavar="DIR", help="write bench.png and per-kernel timeline PNGs here")
    p.add_argument("--json", action="store_true")
    memory.add_argument(p)


def valuation(program: Program, specs: list[str], only_declared: bool = False) -> dict[str, int]:
    """The parameter values of one run: --param values, else the defaults. With
    `only_declared` (bench, over several kernels) a --param the kernel does not declare
    is left out instead of being an error."""
    values: dict[str, int] = {}
    declared = {p.name for p in program.params}
    for spec in specs:
        match = _VALUE.match(spec)
        if not match:
            raise UsageError(f"bad --param '{spec}': expected NAME=VALUE with a non-negative integer")
        if match.group(1) not in declared:
            if only_declared:
                continue
            raise UsageError(f"--param {match.group(1)}: the kernel has no such parameter")
        values[match.group(1)] = int(match.group(2))
    for p in program.params:
        if p.name not in values:
            if p.default is None:
                raise UsageError(f"parameter {p.name} has no default: give --param {p.name}=VALUE")
            values[p.name] = p.default
    return values


def trace_events(program: Program, timeline: Timeline, profile: Profile, strategy: str) -> dict:
    """Chrome trace-event JSON: one track per engine, ops and stalls as slices (us)."""
    scale = 1.0 / (1000.0 * profile.clock_ghz)  # cycles -> microseconds
    events = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": f"{strategy} ({profile.name})"}}]
    for n, engine in enumerate(program.engines):
        events.append({"ph": "M", "pid": 1, "tid": n, "name": "thread_name", "args": {"name": engine}})
    for s in timeline.slices:
        if s.end <= s.start:
            continue
        events.append({"ph": "X", "pid": 1, "tid": s.engine, "name": s.name, "cat": s.kind,
                       "ts": s.start * scale, "dur": (s.end - s.start) * scale,
                       "args": {"start_cycle": s.start, "end_cycle": s.end}})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def _load(path: str) -> Program:
    from verify.cli.mlir import load

    return load(path)


def _strategies(path: Path, program: Program, strategies) -> tuple:
    """The suite's strategies for .sync kernels; for .mlir kernels also snax-barrier, and
    `manual` when the file holds SNAX's own barriers (e.g. its pipelined output)."""
    from verify.cli.mlir import is_mlir

    if not is_mlir(str(path)) or strategies != BENCH_STRATEGIES:
        return strategies
    has_barriers = any(isinstance(s, Barrier) for s in walk_stmts(program.body))
    return SNAX_BENCH_STRATEGIES + (("manual",) if has_barriers else ())


def cmd_simulate(args) -> int:
    check_strategy(args.strategy, ("oracle",))
    program = _load(args.file)
    profile = load_profile(args.profile)
    values = valuation(program, args.param)
    try:
        timeline = run(program, args.strategy, values, profile, progress_for("simulate", start=getattr(args, "began", None)))
    except EvalError as err:  # e.g. a negative latency expression: FILE:LINE:COL
        err.filename = err.filename or args.file
        raise
    except Failure as err:
        print(f"syncproof: simulate: {err}", file=sys.stderr)
        return 1
    if args.trace:
        try:
            Path(args.trace).write_text(json.dumps(trace_events(program, timeline, profile, args.strategy)))
        except OSError as err:
            raise UsageError(f"cannot write {args.trace}: {err.strerror}") from None
    engines = program.engines
    if args.json:
        print(json.dumps({
            "cycles": timeline.cycles, "strategy": args.strategy, "profile": profile.name, "param": values,
            "busy": dict(zip(engines, timeline.busy)), "stall": dict(zip(engines, timeline.stall)),
            "overhead": dict(zip(engines, timeline.overhead)),
        }, indent=2))
    else:
        shown = ", ".join(f"{k}={v}" for k, v in values.items()) or "no parameters"
        us = timeline.cycles / (1000 * profile.clock_ghz)
        print(f"{args.file}: strategy {args.strategy}, profile {profile.name}, {shown}")
        print(f"total: {timeline.cycles:.0f} cycles ({us:.2f} us)")
        print(f"{'engine':<8} {'busy':>10} {'stall':>10} {'overhead':>10}")
        for n, engine in enumerate(engines):
            print(f"{engine:<8} {timeline.busy[n]:>10.0f} {timeline.stall[n]:>10.0f} {timeline.overhead[n]:>10.0f}")
        if args.trace:
            print(f"trace: {args.trace} (open in ui.perfetto.dev)")
    return 0


def bench_rows(paths: list[Path], profile: Profile, strategies=BENCH_STRATEGIES, progress=None,
               params: list[str] = ()):
    """Per kernel and strategy: cycles, and ratios to barrier and oracle; plus timelines.
    `params` (NAME=VALUE) set the parameters of every kernel that declares them."""
    rows, timelines = [], {}
    for path in paths:
        name = kernel_name(path, paths)
        program = _load(str(path))
        values = valuation(program, list(params), only_declared=True)
        cycles, barriers = {}, {}
        kernel_strategies = _strategies(path, program, strategies)
        for strategy in kernel_strategies:
            if progress:
                progress(f"{path.name} {strategy}")
            try:
                timeline, barriers[strategy] = _timed(program, strategy, values, profile)
            except EvalError as err:  # e.g. a negative latency expression: FILE:LINE:COL
                err.filename = err.filename or str(path)
                raise
            cycles[strategy] = timeline.cycles
            timelines[(name, strategy)] = (program, timeline)
        for strategy in kernel_strategies:
            row = {"kernel": name, "strategy": strategy, "cycles": cycles[strategy],
                   "vs_barrier": cycles["barrier"] / cycles[strategy] if cycles[strategy] else None,
                   "vs_oracle": cycles[strategy] / cycles["oracle"] if cycles["oracle"] else None}
            if "snax-barrier" in cycles:
                row["vs_snax_barrier"] = cycles["snax-barrier"] / cycles[strategy] if cycles[strategy] else None
                row["barriers"] = barriers[strategy]
            rows.append(row)
    return rows, timelines


def kernel_name(path: Path, paths: list[Path]) -> str:
    """The kernel's name in the table: its file's stem, or its file name when two
    kernels share a stem (tiled_add.sync and tiled_add.mlir)."""
    return path.stem if sum(p.stem == path.stem for p in paths) == 1 else path.name


def _timed(program: Program, strategy: str, values: dict, profile: Profile) -> tuple[Timeline, int]:
    """`run`, and the number of barriers the run passes."""
    from algorithm.registry import get_strategy

    if strategy == "oracle":
        return run(program, strategy, values, profile), 0
    unrolled = unroll_bounded(get_strategy(strategy)(program).program, values)
    return simulate(unrolled, profile), len(unrolled.barriers)


def cmd_bench(args) -> int:
    import time

    start = time.monotonic()
    profile = load_profile(args.profile)
    if args.kernels:
        paths = list(dict.fromkeys(Path(k) for k in args.kernels))
    else:
        paths = sorted(SUITE.glob("*.sync"))
        if not paths:
            raise UsageError(f"no kernels given and no suite at {SUITE}")
    out = _out_dir(args.out)
    _check_bench_params(args.param, paths)
    rows, timelines = bench_rows(paths, profile, progress=progress_for("bench", start=getattr(args, "began", None)), params=args.param)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_tables(rows, profile.name)
        print(f"({len(paths)} kernels in {time.monotonic() - start:.1f} s)")
    if out is not None:
        pictures = _write_pictures(out, rows, timelines, paths, profile)
        print(f"pictures: {', '.join(str(p) for p in pictures)}", file=sys.stderr if args.json else sys.stdout)
    return 0


def _check_bench_params(specs: list[str], paths: list[Path]) -> None:
    """Every `bench --param NAME=VALUE` is well formed and names a parameter of some kernel."""
    names: set[str] = set()
    for spec in specs:
        match = _VALUE.match(spec)
        if not match:
            raise UsageError(f"bad --param '{spec}': expected NAME=VALUE with a non-negative integer")
        names.add(match.group(1))
    declared = {p.name for path in paths for p in _load(str(path)).params} if names else set()
    for name in sorted(names - declared):
        raise UsageError(f"--param {name}: no kernel given has such a parameter")


def _out_dir(text: str | None) -> Path | None:
    """The --out folder, created now, so that a bad one fails before the bench runs."""
    if text is None:
        return None
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {text}: not a folder (a file of that name exists)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"--out {text}: cannot create the folder: {err.strerror}") from None
    return out


def _write_pictures(out: Path, rows, timelines, paths: list[Path], profile: Profile) -> list[Path]:
    from verify.timing.plots import bar_chart, timeline_png

    written = [out / "bench.png"]
    try:
        bar_chart(rows, written[0], profile.name)
        for path in paths:
            name = kernel_name(path, paths)
            target = out / f"{name}_timeline.png"
            timeline_png([(s, *timelines[(name, s)]) for s in ("barrier", "threshold")], profile, target, name)
            written.append(target)
    except OSError as err:
        raise UsageError(f"cannot write the pictures to {out}: {err.strerror}") from None
    return written


def _print_tables(rows, profile_name: str) -> None:
    others = [s for s in BENCH_STRATEGIES if s not in ("oracle", "threshold", "barrier")]
    print(f"profile {profile_name}; cycles at the kernels' default parameters; speed-up = barrier cycles / "
          f"threshold cycles; vs oracle = threshold cycles / oracle cycles; peers: cycles (their ratio to oracle)")
    if any("vs_snax_barrier" not in r for r in rows):
        print(f"{'kernel':<28} {'oracle':>10} {'threshold':>10} {'barrier':>10} {'speed-up':>9} {'vs oracle':>9}"
              + "".join(f" {s:>18}" for s in others))
    for kernel in dict.fromkeys(r["kernel"] for r in rows if "vs_snax_barrier" not in r):
        by = {r["strategy"]: r for r in rows if r["kernel"] == kernel}
        t = by["threshold"]
        peers = "".join(f" {by[s]['cycles']:>10.0f} ({_ratio(by[s]['vs_oracle'], '.3f')})" for s in others)
        print(f"{kernel:<28} {by['oracle']['cycles']:>10.0f} {t['cycles']:>10.0f} {by['barrier']['cycles']:>10.0f} "
              f"{_ratio(t['vs_barrier'], '>8.2f', 'x')} {_ratio(t['vs_oracle'], '>9.3f')}{peers}")
    _print_snax_table(rows)


def _ratio(value, spec: str, suffix: str = "") -> str:
    """A ratio as the tables print it; "-" where it is undefined (a run of 0 cycles)."""
    if value is None:
        width = "".join(ch for ch in spec if ch.isdigit() or ch == ".").split(".")[0]
        return f"{'-':>{int(width) + len(suffix)}}" if width else "-"
    return f"{value:{spec}}{suffix}"


def _print_snax_table(rows) -> None:
    """MLIR kernels: threshold against SNAX's barriers (its pass, and the file's own)."""
    kernels = list(dict.fromkeys(r["kernel"] for r in rows if "vs_snax_barrier" in r))
    if not kernels:
        return
    print("MLIR kernels: barriers = barrier passes in the run; gain = snax-barrier (or the file's own SNAX "
          "barriers, manual) cycles / threshold cycles")
    print(f"{'kernel':<22} {'oracle':>8} {'threshold':>10} {'snax-barrier':>13} {'(barriers)':>10} "
          f"{'manual':>8} {'(barriers)':>10} {'gain':>7} {'vs manual':>9}")
    for kernel in kernels:
        by = {r["strategy"]: r for r in rows if r["kernel"] == kernel}
        t, s, m = by["threshold"], by["snax-barrier"], by.get("manual")
        manual = f"{m['cycles']:>8.0f} {m['barriers']:>10}" if m else f"{'-':>8} {'-':>10}"
        vs_manual = f"{m['cycles'] / t['cycles']:>8.2f}x" if m and t["cycles"] else f"{'-':>9}"
        print(f"{kernel:<22} {by['oracle']['cycles']:>8.0f} {t['cycles']:>10.0f} {s['cycles']:>13.0f} "
              f"{s['barriers']:>10} {manual} {_ratio(t['vs_snax_barrier'], '>6.2f', 'x')} {vs_manual}")
