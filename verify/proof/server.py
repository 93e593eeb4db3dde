"""The server the all-values proof's worker processes fork from (verify/proof/jobs.py).
This module imports nothing heavy, so that `verify` can start the server before it loads
z3 and sympy itself: the two loads then run side by side, instead of `verify` of a
small kernel waiting for a server that starts its imports only after its own.
"""

from __future__ import annotations

import multiprocessing

PRELOAD = ["verify.proof.jobs", "verify.proof.prove"]  # what the server loads once, for every worker


def start_workers(method: str = "forkserver"):
    """The multiprocessing context the workers start from; for `forkserver`, its server
    process started now (idempotent) with the proof's modules loaded, so that the proof's
    workers fork at once."""
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(PRELOAD)
        from multiprocessing import forkserver

        forkserver.ensure_running()
    return context
