"""Argument types and option texts shared by the command modules."""

from __future__ import annotations

import argparse


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0 (`--timeout 0` and `-1` were
    accepted and meant "no limit" or an instant unknown; issue 15 item 9)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: a time limit must be a finite number of seconds > 0")
    return value
