"""The `search` and `mutate` commands (docs/design.md section 6; verify/search/search.py and
verify/search/mutate.py do the work, this module parses arguments and prints)."""

from __future__ import annotations

import json
import sys
from collections import Counter

from semantics.errors import UsageError
from semantics.printer import print_program
from verify.cli import memory
from verify.cli import fanout as cli_fanout
from verify.cli.args import check_strategy, strategy_help
from verify.cli.common import EXIT_FAIL, EXIT_OK, EXIT_UNKNOWN, parse_bounds
from verify.cli.display import progress_for
from verify.cli.report import result_json, result_text
from verify.verdicts import PROPERTIES, CheckOptions, MutantStatus, Property



def add_parsers(sub) -> None:
    p = sub.add_parser("search", help="generate kernels, sync them with a strategy, verify, shrink failures")
    p.add_argument("--strategy", default="threshold", help=strategy_help())
    p.add_argument("--examples", type=int, default=200, help="kernels to generate (default 200)")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same run")
    p.add_argument("--out", metavar="DIR", help="write a reproducer (.sync and a pytest file) here on failure")
    p.add_argument("--property", choices=PROPERTIES, default=Property.BISIMULATION.value)
    p.add_argument("--max-param", type=int, default=2, metavar="K",
                   help="check every generated kernel with parameters over 0..K (default 2)")
    cli_fanout.add_arguments(p, "the generated kernels")
    p.add_argument("--json", action="store_true")
    memory.add_argument(p)

    p = sub.add_parser("mutate", help="mutate a kernel's synchronization and check that the verifier kills the mutants")
    p.add_argument("file", help="a .sync kernel, or an .mlir file (FILE.mlir:N names one of its cases)")
    p.add_argument("--strategy", default="threshold", help=strategy_help())
    p.add_argument("--param", action="append", default=[], metavar="NAME=LO..HI")
    p.add_argument("--max-param", type=int, metavar="K")
    p.add_argument("--max-states", type=int, default=CheckOptions().max_states)
    cli_fanout.add_arguments(p, "the mutants")
    p.add_argument("--json", action="store_true")
    memory.add_argument(p)


def cmd_search(args) -> int:
    from verify.search.search import SearchOptions, program_summary, search, write_reproducer

    if args.examples <= 0:
        raise UsageError("--examples must be positive")
    if args.max_param < 0:
        raise UsageError("--max-param must be non-negative")
    check_strategy(args.strategy)
    options = SearchOptions(strategy=args.strategy, examples=args.examples, seed=args.seed,
                            property=args.property, max_param=args.max_param, progress=progress_for("search", start=getattr(args, "began", None)))
    outcome = search(options, cli_fanout.fan_out_of(args))
    finding = outcome.finding
    summary = {
        "strategy": args.strategy, "property": args.property, "seed": args.seed,
        "examples": outcome.examples, "skipped_unknown": outcome.skipped_unknown,
        "skipped_rejected": outcome.skipped_rejected, "largest_ops": outcome.largest_ops,
        "seconds": round(outcome.seconds, 1), "bounds": f"0..{args.max_param}",
    }
    written = None
    if finding is not None and args.out:
        written = write_reproducer(finding, options, args.out)
    if args.json:
        data = dict(summary, found=finding is not None)
        if finding is not None:
            data["kernel"] = print_program(finding.program)
            if finding.crash:
                data["crash"] = finding.crash
            else:
                data["synced"] = print_program(finding.synced)
                data["result"] = result_json(finding.result, args.strategy)
            if written:
                data["reproducer"] = [str(p) for p in written]
        else:
            data["largest_kernel"] = print_program(outcome.largest_program) if outcome.largest_program else None
        print(json.dumps(data, indent=2))
    elif finding is None:
        print(f"search: no counterexample to {args.property} for strategy {args.strategy} in "
              f"{outcome.examples} kernels (seed {args.seed}, parameters over 0..{args.max_param}, "
              f"{outcome.seconds:.1f}s)")
        if outcome.skipped_unknown or outcome.skipped_rejected:
            print(f"skipped: {outcome.skipped_unknown} with an unknown check (budget), "
                  f"{outcome.skipped_rejected} rejected by the strategy")
        if outcome.largest_program is not None:
            print(f"largest kernel tried ({program_summary(outcome.largest_program)}):")
            sys.stdout.write(print_program(outcome.largest_program))
    else:
        print(f"search: strategy {args.strategy} fails {args.property} on this kernel "
              f"(shrunk; {outcome.examples} kernels tried, seed {args.seed}):")
        sys.stdout.write(print_program(finding.program))
        if finding.crash:
            print(f"the strategy crashed: {finding.crash}")
        else:
            print(f"\n{args.strategy} output:")
            sys.stdout.write(print_program(finding.synced))
            print()
            print(result_text(finding.result, args.strategy, "the shrunk kernel"))
        if written:
            print(f"reproducer: {written[0]} and {written[1]}")
    if finding is None:
        return EXIT_OK
    return EXIT_FAIL


def cmd_mutate(args) -> int:
    from algorithm.registry import get_strategy
    from verify.engines.select import check
    from verify.search.mutate import OPERATORS, kill_rate, run_mutants

    from verify.cli.mlir import load

    check_strategy(args.strategy)
    program = load(args.file)
    bounds = parse_bounds(program, args.param, args.max_param, args.file)
    if args.max_states <= 0:
        raise UsageError("--max-states must be positive")
    synced = get_strategy(args.strategy)(program).program
    options = CheckOptions(max_states=args.max_states)
    original = check(synced, bounds, options)
    if original.holds is not True:
        print(f"mutate: the {args.strategy} output of {args.file} is itself {original.verdict.value} within the "
              "bounds; mutants of it say nothing", file=sys.stderr)
        return EXIT_UNKNOWN if original.holds is None else EXIT_FAIL
    results = run_mutants(synced, bounds, options, progress=progress_for("mutate", start=getattr(args, "began", None)), fan_out=cli_fanout.fan_out_of(args))
    rate = kill_rate(results)
    if args.json:
        print(json.dumps({
            "file": args.file, "strategy": args.strategy,
            "bounds": {name: [lo, hi] for name, lo, hi in bounds},
            "mutants": [{"operator": r.mutant.operator, "where": r.mutant.where, "outcome": r.outcome,
                         "verdict": r.verdict.value} for r in results],
            "killed": sum(r.outcome == MutantStatus.KILLED for r in results),
            "equivalent": sum(r.outcome == MutantStatus.EQUIVALENT for r in results),
            "unknown": sum(r.outcome == "unknown" for r in results),
            "kill_rate": rate,
        }, indent=2))
    else:
        width = max((len(r.mutant.operator) for r in results), default=8)
        for r in results:
            verdict = f" ({r.verdict.value})" if r.outcome == MutantStatus.KILLED else ""
            print(f"{r.mutant.operator:<{width}}  {r.outcome:<10}{verdict:<22} {r.mutant.where}")
        tally = Counter((r.mutant.operator, r.outcome) for r in results)
        print()
        print(f"{'operator':<{width}}  killed  equivalent  unknown")
        for op in OPERATORS:
            row = [tally[(op, o)] for o in MutantStatus]
            if any(row):
                print(f"{op:<{width}}  {row[0]:>6}  {row[1]:>10}  {row[2]:>7}")
        bounds_shown = ", ".join(f"{n}={lo}..{hi}" for n, lo, hi in bounds) or "no parameters"
        shown = "n/a" if rate is None else f"{100 * rate:.1f}%"
        print(f"{len(results)} mutants of the {args.strategy} output, bounds {bounds_shown}: kill rate {shown}")
    if any(r.outcome == "unknown" for r in results):
        return EXIT_UNKNOWN
    return EXIT_OK
