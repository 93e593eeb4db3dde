"""The `syncproof` command line (docs/design.md section 6).

Exit status: 0 the property holds within the bounds (or the command succeeded),
1 the property fails (a counterexample is printed), 2 bad input or usage,
3 unknown (time or state limit) or an internal error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from algorithm.registry import get_strategy, stats_line
from semantics.errors import KernelError, LimitReached, SyncproofError, UsageError
from semantics.printer import print_program

from verify import api
from verify.cli import lean as cli_lean
from verify.cli import memory as cli_memory
from verify.cli.args import check_strategy, positive_seconds, strategy_help
from verify.cli import mlir as cli_mlir
from verify.cli import nki as cli_nki
from verify.cli import prove as cli_prove
from verify.cli import search as cli_search
from verify.cli import timing as cli_timing
from verify.cli import fanout as cli_fanout
from verify.engines import select as engine_select
from verify.engines.explicit import InternalError
from verify.cli.limits import CommandLimit
from verify.engines.deadline import DeadlineReached
from verify.cli.common import EXIT_FAIL, EXIT_OK, EXIT_UNKNOWN, EXIT_USAGE, parse_bounds, write_output
from verify.cli.report import add_format_arguments, output_format, result_json, result_text
from verify.cli.sarif import sarif_log, unknown_log
from verify.cli.display import progress_for
from verify.timing.scheduler import load_profile
from verify.verdicts import PROPERTIES, CheckOptions, EngineName, Property, Verdict



class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (docs/cli.md); the usage is one --help away
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="syncproof", description="Insert and verify cross-engine synchronization.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("check", help="parse, validate and print a kernel")
    p.add_argument("file", help="a .sync kernel, or an .mlir file (FILE.mlir:N names one of its cases)")

    p = sub.add_parser("sync", help="insert synchronization and print the synchronized kernel")
    p.add_argument("file", help="a .sync kernel, or an .mlir file (FILE.mlir:N names one of its cases)")
    p.add_argument("--strategy", default="threshold", help=strategy_help())
    p.add_argument("-o", "--output", metavar="OUT")
    p.add_argument("--emit", choices=["sync", "mlir"], default="sync",
                   help="output language; mlir: the imported .mlir FILE with its synchronization (docs/snax.md)")
    p.add_argument("--profile", default="trainium",
                   help="machine profile whose semaphore budget the statistics compare against (default trainium)")
    cli_memory.add_argument(p)

    p = sub.add_parser("verify", help="check a synchronized kernel against the reference semantics")
    p.add_argument("file", help="a .sync kernel, or an .mlir file (FILE.mlir:N names one of its cases)")
    p.add_argument("--strategy", default="threshold", help=strategy_help())
    p.add_argument("--param", action="append", default=[], metavar="NAME=LO..HI",
                   help="inclusive bounds for one parameter (NAME=LO..HI or NAME=VALUE)")
    p.add_argument("--max-param", type=int, metavar="K",
                   help="bound every parameter not given by --param to LOWER..max(K, LOWER), LOWER its declared "
                        "lower bound (`param K >= 1`; default 0), K default 3")
    p.add_argument("--engine", choices=[*engine_select.CHOICES, EngineName.Z3.value, EngineName.BOTH.value],
                   default=EngineName.AUTO.value,
                   help="auto (default): hb for waits and barriers, explicit for flags and tokens; "
                        "hb: the happens-before engine; explicit: the product exploration; z3; "
                        "both: explicit and z3, which must agree")
    cli_fanout.add_arguments(p, "the parameter valuations")
    p.add_argument("--property", choices=PROPERTIES, default=Property.BISIMULATION.value)
    p.add_argument("--max-states", type=int, default=CheckOptions().max_states,
                   help="state limit per parameter valuation; reaching it gives 'unknown'")
    p.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help="time limit of the check in seconds, from the start of the command (> 0); "
                        "reaching it gives 'unknown' (exit 3)")
    p.add_argument("--dump-smt", metavar="DIR", default=None,
                   help="(z3) write a query that ends 'unknown' to DIR as an .smt2 file")
    cli_prove.add_arguments(p)
    add_format_arguments(p)  # --format text|json|sarif, --json
    cli_memory.add_argument(p)

    cli_search.add_parsers(sub)
    cli_timing.add_parsers(sub)
    cli_lean.add_parsers(sub)
    cli_mlir.add_parsers(sub)
    cli_nki.add_parsers(sub)  # also --nki-engine on every command that reads a kernel

    return parser


def _cmd_check(args) -> int:
    program = cli_mlir.load(args.file)
    sys.stdout.write(print_program(program))
    return EXIT_OK


def _cmd_sync(args) -> int:
    check_strategy(args.strategy)
    program = cli_mlir.load(args.file)
    began = getattr(args, "began", None) or time.monotonic()
    with CommandLimit(None, began, progress_for("sync", start=began)) as stages:  # progress only: no limit
        stages.phase(f"syncing with strategy {args.strategy}")
        result = get_strategy(args.strategy)(program)
    text = cli_mlir.emit_text(args.file, result.program) if args.emit == "mlir" else print_program(result.program)
    profile = load_profile(args.profile)
    print(stats_line(result.stats), file=sys.stderr)
    print(f"sync: {result.stats.semaphores} semaphores used, budget {profile.semaphore_budget} "
          f"(profile {profile.name})", file=sys.stderr)
    if result.stats.semaphores > profile.semaphore_budget:
        print(f"sync: warning: the program uses {result.stats.semaphores} semaphores, above the "
              f"{profile.name} budget of {profile.semaphore_budget}", file=sys.stderr)
    for note in result.stats.notes or ():
        print(f"sync: note: {note}", file=sys.stderr)
    write_output(args.output, text)
    return EXIT_OK


def _cmd_verify(args) -> int:
    """Parse the flags into VerifyOptions, run the API's `verify`, format its Report.
    `--timeout` counts from the start of the command and covers the sync and the bounded
    check (verify/cli/limits.py); the all-values proof has its own budget."""
    began = getattr(args, "began", None) or time.monotonic()
    check_strategy(args.strategy)
    args.json = output_format(args) == "json"
    program = cli_mlir.load(args.file)
    bounds = parse_bounds(program, args.param, args.max_param, args.file)
    if args.max_states <= 0:
        raise UsageError("--max-states must be positive")
    progress = progress_for("verify", start=began)
    limit = CommandLimit(args.timeout, began, progress)
    progress.poll = limit.during_check

    def on_checked(sync_result) -> None:  # the strategy's statistics, before the proof starts
        limit.disarm()
        if args.strategy != "manual":
            print(stats_line(sync_result.stats), file=sys.stderr)

    # --timeout counts from the start of the command, the API's timeout from its call
    left = None if args.timeout is None else max(1e-3, args.timeout - (time.monotonic() - began))
    options = api.VerifyOptions(
        strategy=args.strategy, params=bounds, max_param=args.max_param, engine=args.engine,
        property=args.property, scope=cli_prove.scope_option(args.scope), max_states=args.max_states, timeout=left,
        proof_timeout=args.proof_timeout, proof_rlimit=args.proof_rlimit, proof_jobs=args.proof_jobs,
        dump_smt=args.dump_smt, verbose=args.verbose,
        workers=args.workers, cluster=args.cluster, progress=progress, on_checked=on_checked)
    try:
        with limit:
            limit.phase(f"syncing with strategy {args.strategy}")
            report = api.verify(program, options)
    except KernelError as err:  # a run-time error of the kernel (for some valuation)
        err.filename = err.filename or args.file
        raise
    except DeadlineReached:
        return _report_time_limit(args, limit)
    except Exception:  # noqa: BLE001 - re-raised unless the time limit stopped it
        # Whatever stopped the sync once the limit had passed (a planner refusal, a Z3
        # query the watchdog interrupted: `Z3Exception: canceled`), the limit came first.
        if (limit.syncing or limit.interrupted) and limit.deadline.passed():
            return _report_time_limit(args, limit)
        raise
    if report.by_engine and report.verdict == Verdict.UNKNOWN:
        return _report_both_unknown(args, report)
    extra = {"z3_queries": report.by_engine[1].states} if report.by_engine else None
    _print_result(args, report, extra)
    if report.verdict == Verdict.UNKNOWN:
        return EXIT_UNKNOWN
    return EXIT_OK if report.holds else EXIT_FAIL


def _report_time_limit(args, limit: CommandLimit) -> int:
    """`--timeout` reached before the bounded check answered: unknown, exit 3."""
    reason = limit.reason()
    if args.format == "sarif":
        print(json.dumps(unknown_log(args.file, args.strategy, args.engine, args.property, reason), indent=2))
    elif args.json:
        print(json.dumps({"verdict": Verdict.UNKNOWN.value, "holds": None, "property": args.property,
                          "scope": "bounded", "strategy": args.strategy, "engine": args.engine,
                          "complete": False, "reason": reason}, indent=2))
    else:
        print(f"{args.file}: strategy {args.strategy}, engine {args.engine}, property {args.property}")
        print(f"verdict: unknown ({reason}); nothing is claimed")
    return EXIT_UNKNOWN


def _print_result(args, report, extra=None) -> None:
    proof, proof_text = cli_prove.all_values(report, args.property)
    sync_result = report.sync
    if args.format == "sarif":
        print(json.dumps(sarif_log(report.result, args.file, args.strategy, proof), indent=2))
    elif args.json:
        data = result_json(report.result, args.strategy)
        data["scope"] = report.scope.value
        data["all_values"] = proof
        data["sync"] = {k: v for k, v in sync_result.stats.as_dict().items() if k != "strategy"}
        data.update(extra or {})
        print(json.dumps(data, indent=2))
    else:
        text = result_text(report.result, args.strategy, args.file, proved_all=proof.get("status") == "proved",
                           checked_bounds=report.checked_bounds)
        print("\n".join([text, *proof_text]))


def _report_both_unknown(args, report) -> int:
    """`--engine both` when either answer is unknown or they disagree (a bug in
    syncproof): both answers, exit 3."""
    if report.disagreement:
        print(f"syncproof: internal error (a bug in syncproof): {report.result.reason}", file=sys.stderr)
    explicit, z3 = report.by_engine
    if args.format == "sarif":
        print(json.dumps(sarif_log(report.result, args.file, args.strategy), indent=2))
    elif args.json:
        data = result_json(report.result, args.strategy)
        data["explicit"] = result_json(explicit, args.strategy)
        data["z3"] = result_json(z3, args.strategy)
        print(json.dumps(data, indent=2))
    else:
        print(result_text(report.result, args.strategy, args.file))
        for result in (explicit, z3):
            print(f"--- engine {result.engine} ---")
            print(result_text(result, args.strategy, args.file))
    return EXIT_UNKNOWN


def main(argv: list[str] | None = None) -> int:
    """Run one command. Deeply nested kernels need deep recursion, so the command runs
    in a thread with a large stack; the main thread waits for it and takes Ctrl-C
    (verify/cli/interrupt.py: exit 130, one line, no process left behind)."""
    from semantics.parser import deep_recursion
    from verify.cli.display import stop_all as stop_displays
    from verify.cli.interrupt import run_interruptibly

    outcome: list = [EXIT_UNKNOWN]

    def run():
        with deep_recursion():
            try:
                outcome[0] = _main(argv)
            except BrokenPipeError:  # the reader of our output went away (`| head`)
                import os

                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                outcome[0] = EXIT_OK
            except MemoryError:  # the address space ran out (--max-memory, ulimit -v)
                outcome[0] = _out_of_memory()
            except Exception as exc:  # noqa: BLE001 - a bug in syncproof: one line, exit 3
                outcome[0] = _internal_error(exc)
            finally:
                stop_displays()  # a live progress display leaves the screen as it found it

    run_interruptibly(run, 512 * 1024 * 1024)
    return outcome[0]


def _out_of_memory() -> int:
    """Memory ran out outside any engine that turns it into `unknown`: one line, exit 3."""
    from verify.cli.memory import out_of_memory_line

    print(out_of_memory_line(), file=sys.stderr)
    return EXIT_UNKNOWN


def _internal_error(exc: Exception) -> int:
    """A crash is a bug in syncproof: one line (docs/cli.md), the traceback only with
    SYNCPROOF_TRACEBACK=1."""
    import os
    import traceback

    if os.environ.get("SYNCPROOF_TRACEBACK"):
        traceback.print_exception(exc, file=sys.stderr)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    print(f"syncproof: internal error (a bug in syncproof): {type(exc).__name__}: {first} "
          "(SYNCPROOF_TRACEBACK=1 shows where)", file=sys.stderr)
    return EXIT_UNKNOWN


def _file_of(args) -> str | None:
    """The kernel file a command reads (FILE.mlir:N names the file)."""
    spec = getattr(args, "file", None)
    return cli_mlir.file_of(spec) if spec else None


# One entry per subcommand (argparse makes the subcommand required and known).
_COMMANDS = {
    "check": _cmd_check, "sync": _cmd_sync, "verify": _cmd_verify,
    "simulate": cli_timing.cmd_simulate, "bench": cli_timing.cmd_bench,
    "search": cli_search.cmd_search, "mutate": cli_search.cmd_mutate,
    "lean": cli_lean.cmd_lean, "import-mlir": cli_mlir.cmd_import,
    "import-nki": cli_nki.cmd_import,
}


def _main(argv: list[str] | None) -> int:
    began = time.monotonic()
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    args.began = began  # times and --timeout count from here
    try:
        cli_memory.apply(getattr(args, "max_memory", None))
        with cli_nki.engines_in_force(args):
            return _COMMANDS[args.command](args)
    except InternalError as err:
        print(f"syncproof: internal error (a bug in syncproof): {err}", file=sys.stderr)
        return EXIT_UNKNOWN
    except LimitReached as err:  # a limit its caller should have turned into `unknown`: a bug, exit 3
        return _internal_error(err)
    except KernelError as err:  # errors found after parsing (run time, strategies) name the file too
        print(err.render(err.filename or _file_of(args)), file=sys.stderr)
        return EXIT_USAGE
    except SyncproofError as err:
        print(f"syncproof: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except RecursionError:
        print("syncproof: error: the kernel is nested too deeply to process", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
