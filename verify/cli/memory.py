"""`--max-memory MB` (docs/cli.md, "Memory"): an address-space limit for the command
and every process it starts.

The limit is RLIMIT_AS, set in the command's own process after its arguments are
read; child processes (process pools, the all-values proof's workers, a local Dask
cluster) inherit it, so each of them has the same limit of its own. An allocation
beyond it fails: Python raises MemoryError, which the engines and the command line
turn into `unknown` with the reason (exit 3), never a traceback.
"""

from __future__ import annotations

import resource

from semantics.errors import UsageError

# What the interpreter, Z3 and the libraries map before any kernel is read, plus the
# command thread's stack (verify/cli/main.py): a smaller limit fails at once.
MINIMUM_MB = 1024

REASON = "out of memory"


def add_argument(p) -> None:
    p.add_argument("--max-memory", type=int, default=None, metavar="MB",
                   help="address-space limit of the command and of each process it starts, in MB "
                        f"(at least {MINIMUM_MB}); reaching it gives 'unknown' (exit 3)")


def apply(megabytes: int | None) -> None:
    """Set RLIMIT_AS to `megabytes` (None: leave the limit as it is). Never raises the
    hard limit: a larger value than the hard limit is lowered to it."""
    if megabytes is None:
        return
    if megabytes < MINIMUM_MB:
        raise UsageError(f"--max-memory must be at least {MINIMUM_MB} (MB): the interpreter, Z3 and "
                         "the command's stack need that much address space before a kernel is read")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = megabytes * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft != resource.RLIM_INFINITY:
        wanted = min(wanted, soft)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def out_of_memory_line() -> str:
    """The one stderr line of a command that ran out of memory outside the engines."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    limit = "" if soft == resource.RLIM_INFINITY else f" (address-space limit {soft // (1024 * 1024)} MB)"
    return (f"syncproof: error: {REASON}{limit}; the result is unknown: give a larger --max-memory, "
            "smaller --param bounds, or a smaller kernel")
