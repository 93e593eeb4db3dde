"""Argument types and option texts shared by the command modules."""

from __future__ import annotations

import argparse


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0 (`--timeout 0` or `-1` would
    otherwise mean "no limit" or an instant unknown, neither of which a user asks for)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: a time limit must be a finite number of seconds > 0")
    return value


MAX_PROOF_JOBS = 64  # each worker holds its own terms (~200 MB for a large proof)


def proof_jobs(text: str) -> int:
    """An argparse type: a whole number in 1..MAX_PROOF_JOBS (`--proof-jobs`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if not 1 <= value <= MAX_PROOF_JOBS:
        raise argparse.ArgumentTypeError(f"{text}: must be between 1 and {MAX_PROOF_JOBS}")
    return value


def strategy_names(extra: tuple[str, ...] = ()) -> list[str]:
    from algorithm.registry import STRATEGIES

    return [*STRATEGIES, *extra]


def strategy_help(extra: tuple[str, ...] = (), what: str = "synchronization strategy") -> str:
    return f"{what}: {', '.join(strategy_names(extra))} (default threshold; manual: the file as written)"


def check_strategy(name: str, extra: tuple[str, ...] = ()) -> None:
    """A usage error for a strategy name that is neither registered nor in `extra`
    (`oracle` for simulate), naming every one that is."""
    from algorithm.registry import PLANNED, get_strategy

    if name in extra or name in strategy_names():
        return
    if name in PLANNED:
        get_strategy(name)  # its "not yet available" message
    from semantics.errors import UsageError

    raise UsageError(f"unknown strategy '{name}' (available: {', '.join(strategy_names(extra))})")
