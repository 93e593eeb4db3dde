"""`--workers N` and `--cluster ADDRESS`, for the commands that fan out (verify, search,
mutate; verify/fanout.py)."""

from __future__ import annotations

from verify.fanout import FanOut


def add_arguments(parser, what: str) -> None:
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help=f"check {what} on N local processes (default 1: serially); the results, and the "
                             "first counterexample, are those of a serial run")
    parser.add_argument("--cluster", metavar="ADDRESS", default=None,
                        help=f"check {what} on the Dask distributed scheduler at ADDRESS (e.g. tcp://host:8786); "
                             "the workers need syncproof installed")


def fan_out_of(args) -> FanOut:
    """The fan-out the arguments ask for (a UsageError for --workers below 1)."""
    return FanOut(workers=args.workers, cluster=args.cluster)
