"""SyncStats: a frozen class read by attribute; `as_dict` is the `verify --json` "sync"
object (with `strategy`), whose fields and their order per strategy are pinned here as
they were when the statistics were a dict."""

from __future__ import annotations

import json

import attrs
import pytest

from algorithm.registry import STRATEGIES, SyncStats, stats_line
from syncproof import load
from verify.cli.main import main

KERNEL = "kernels/pipeline_db.sync"

LAYOUT = {
    "threshold": ["strategy", "dependence_pairs", "waits", "barriers", "semaphores", "dropped_redundant",
                  "conservative", "fallback", "local_barriers", "notes"],
    "barrier": ["strategy", "dependence_pairs", "waits", "barriers", "semaphores", "dropped_redundant",
                "local_barriers", "notes"],
    "flags": ["strategy", "waits", "barriers", "semaphores", "setflag", "waitflag", "sync_only_ops", "fallback",
              "forward_rings", "compact", "notes"],
    "tokens": ["strategy", "waits", "barriers", "semaphores", "push", "pop", "sync_only_ops", "fallback", "notes"],
    "manual": ["strategy", "waits", "barriers", "semaphores"],
}


@pytest.mark.parametrize("strategy", sorted(LAYOUT))
def test_as_dict_fields_per_strategy(strategy):
    stats = STRATEGIES[strategy](load(KERNEL)).stats
    data = stats.as_dict()
    assert list(data) == LAYOUT[strategy]
    assert data["strategy"] == stats.strategy == strategy
    assert data["waits"] == stats.waits and data["semaphores"] == stats.semaphores
    json.dumps(data)  # JSON-ready: notes a list, no tuples of pairs


def test_threshold_reports_no_fallback_as_null():
    data = STRATEGIES["threshold"](load(KERNEL)).stats.as_dict()
    assert "fallback" in data and data["fallback"] is None


def test_peer_clause_counts_keep_their_order_and_agree_with_attributes():
    flagged = STRATEGIES["flags"](load(KERNEL)).program
    stats = STRATEGIES["manual"](flagged).stats
    kinds = [c.kind for op in _ops(flagged) for c in op.syncs]
    assert [k for k, _ in stats.syncs] == list(dict.fromkeys(kinds))
    for kind in ("setflag", "waitflag", "push", "pop"):
        assert stats.sync_count(kind) == kinds.count(kind)
        assert stats.as_dict().get(kind, 0) == kinds.count(kind)
    assert f"{kinds.count('setflag')} setflag" in stats_line(stats)


def _ops(program):
    from semantics.ir import ops

    return ops(program)


def test_frozen_and_not_a_mapping():
    stats = SyncStats(strategy="manual", waits=1, barriers=0, semaphores=1, notes=["a"])
    assert stats.notes == ("a",)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        stats.waits = 2
    with pytest.raises(TypeError):
        stats["waits"]  # noqa: B018 - read by attribute, never by string key


def test_verify_json_sync_object_is_as_dict(capsys):
    assert main(["verify", KERNEL, "--json", "--param", "N=0..1"]) in (0, 3)
    data = json.loads(capsys.readouterr().out)
    expected = STRATEGIES["threshold"](load(KERNEL)).stats.as_dict()
    del expected["strategy"]
    assert data["sync"] == expected and list(data["sync"]) == list(expected)


def test_conservative_count_and_notes_name_only_waits_the_output_has():
    # A transfer's wait on its triggering engine is implied by the trigger's place in
    # that engine's stream, and the queue view drops it from the output. Planned
    # conservatively (the index i * i is not affine), it was still counted as a
    # conservative wait of the output and named in a note.
    from algorithm.queues import with_queues
    from algorithm.registry import sync_threshold
    from semantics.ir import Op, walk_stmts
    from semantics.parser import parse

    program = parse("engines PE ACT\nqueue q0\nparam N\nfor i in 0..N {\n"
                    "  PE w writes s[i * i]\n  PE t reads s[4] via q0\n}\n")
    # Not vacuous: before the queue view drops it, t's wait on PE is the conservative one.
    planned = with_queues(sync_threshold, program).stats
    assert planned.conservative == 1 and planned.notes[0].startswith("t waits on PE conservatively")
    result = STRATEGIES["threshold"](program)
    waits = {(op.name, w.engine) for op in walk_stmts(result.program.body) if isinstance(op, Op) for w in op.waits}
    assert ("t", "PE") not in waits
    assert result.stats.conservative == 0
    assert not any(note.startswith("t waits on PE") for note in result.stats.notes or ())
