"""syncproof's passes and dialect for xDSL's plugin discovery: pyproject.toml names
`SYNCPROOF_UNIVERSE` under the `xdsl.universe` entry points, so `xdsl-opt` (and every
tool that registers the multiverse) finds `syncproof-insert-sync`,
`syncproof-verify-sync` and the `syncproof` dialect once syncproof is installed.
Loading this module imports nothing but xdsl's Universe: the factories import on use."""

from __future__ import annotations

from xdsl.universe import Universe


def _dialect():
    from semantics.mlir.dialect import SYNCPROOF

    return SYNCPROOF


def _insert():
    from verify.xdsl_passes.insert import InsertSync

    return InsertSync


def _verify():
    from verify.xdsl_passes.check import VerifySync

    return VerifySync


DIALECTS = {"syncproof": _dialect}
PASSES = {"syncproof-insert-sync": _insert, "syncproof-verify-sync": _verify}

SYNCPROOF_UNIVERSE = Universe(all_dialects=dict(DIALECTS), all_passes=dict(PASSES))
