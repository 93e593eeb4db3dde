"""The server the all-values proof's worker processes fork from (verify/proof/jobs.py).
This module imports nothing heavy, so that `verify` can start the server before it loads
z3 and sympy itself: the two loads then run side by side, instead of `verify` of a
small kernel waiting for a server that starts its imports only after its own.
"""

from __future__ import annotations

import multiprocessing
import os

PRELOAD = ["verify.proof.jobs", "verify.proof.prove"]  # what the server loads once, for every worker


def start_workers(method: str = "forkserver"):
    """The multiprocessing context the workers start from; for `forkserver`, its server
    process started now (idempotent) with the proof's modules loaded, so that the proof's
    workers fork at once."""
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(PRELOAD)
        from multiprocessing import forkserver

        # The server (a new interpreter) with a fixed hash seed and, where the system
        # allows it, no address-space randomization: its workers' Z3 effort moved from run
        # to run with both (through where objects land in memory, which orders some of
        # Z3's tables), so the same proof spent other units from run to run with either
        # left random (flash attention's), the same in every run with neither.
        saved = os.environ.get("PYTHONHASHSEED")
        os.environ["PYTHONHASHSEED"] = SERVER_HASH_SEED
        layout = _fixed_layout()
        try:
            forkserver.ensure_running()
        finally:
            if layout is not None:
                _personality(layout)
            if saved is None:
                del os.environ["PYTHONHASHSEED"]
            else:
                os.environ["PYTHONHASHSEED"] = saved
    return context


SERVER_HASH_SEED = "0"


ADDR_NO_RANDOMIZE = 0x0040000  # linux/personality.h


def _personality(value: int) -> int:
    import ctypes

    return ctypes.CDLL(None, use_errno=True).personality(value)


def _fixed_layout() -> int | None:
    """Programs this process starts from now on get no address-space randomization
    (Linux); the previous setting, to restore, or None where there is none to set."""
    try:
        was = _personality(0xFFFFFFFF)
        if was < 0 or _personality(was | ADDR_NO_RANDOMIZE) < 0:
            return None
        return was
    except (OSError, AttributeError):
        return None
