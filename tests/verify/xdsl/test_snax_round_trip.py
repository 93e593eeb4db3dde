"""SNAX's own inputs through the xDSL passes: `canonicalize` (the xDSL pass SNAX's
pipeline runs right before its second insert-sync-barrier) then
`syncproof-insert-sync` in place of insert-sync-barrier. The output, imported again
with its waits, is checked against the reference semantics by the checkers (not by the
strategy that wrote it), computes what the input computes, and passes
`syncproof-verify-sync` in the same pipeline."""

from __future__ import annotations

import pytest

from algorithm.peers import strip_sync
from semantics.ir import Op, walk_stmts
from semantics.mlir.dialect import WaitOp, context
from semantics.mlir.parse import split_cases, parse_chunk
from tests.verify.xdsl.support import program_of, run_opt, snax_cases
from verify.api import VerifyOptions, verify
from verify.verdicts import Verdict

CASES = snax_cases()


def test_the_round_trip_covers_snax_inputs_of_every_kind():
    """The importer accepts SNAX's insert-sync-barrier cases, its outputs, the derived
    loops and the dispatch inputs: at least the 22 cases listed in tests/data/snax."""
    assert len(CASES) >= 22, [c.id for c in CASES]


@pytest.mark.parametrize("text", CASES)
def test_insert_sync_output_reimports_bisimilar_and_computes_the_same(text, tmp_path):
    out = run_opt(text, "canonicalize,syncproof-insert-sync", tmp_path)
    synced = program_of(out)
    report = verify(synced, VerifyOptions(strategy="manual", scope="bounded"))
    assert report.verdict == Verdict.BISIMILAR, report.result.witness
    # the same ops, loops and ifs as the (canonicalized) input: only synchronization changed
    assert strip_sync(synced) == strip_sync(program_of(run_opt(text, "canonicalize", tmp_path)))
    # no barrier left, and every wait of the program is an op of the registered dialect
    waits = sum(len(s.waits) for s in walk_stmts(synced.body) if isinstance(s, Op))
    module, _ = parse_chunk(split_cases(out)[0], "out.mlir", context())
    ops = list(module.walk())
    assert "snax.cluster_sync_op" not in out
    assert sum(isinstance(op, WaitOp) for op in ops) >= (1 if waits else 0)


@pytest.mark.parametrize("text", CASES)
def test_verify_sync_accepts_what_insert_sync_wrote(text, tmp_path):
    out = run_opt(text, "canonicalize,syncproof-insert-sync,syncproof-verify-sync", tmp_path)
    assert program_of(out) == program_of(run_opt(text, "canonicalize,syncproof-insert-sync", tmp_path))
