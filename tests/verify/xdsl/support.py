"""Running syncproof-opt in the test process, on SNAX's own inputs, with test passes
that break a synchronized module on purpose."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from xdsl.passes import ModulePass

from semantics.errors import SyncproofError
from semantics.mlir.importer import import_chunk, import_text
from semantics.mlir.parse import op_name, split_cases
from verify.xdsl_passes.opt import SyncproofOptMain

ROOT = Path(__file__).parents[3]
SNAX = ROOT / "tests" / "data" / "snax"


def snax_cases() -> list:
    """pytest params (text of one case) for every case of SNAX's inputs under
    tests/data/snax that the importer accepts (SNAX's pass outputs included)."""
    out = []
    for path in sorted(SNAX.rglob("*.mlir")):
        for chunk in split_cases(path.read_text()):
            try:
                import_chunk(chunk, str(path))
            except SyncproofError:
                continue  # accelerator launches, per-core code, ops with regions: refused by the importer
            out.append(pytest.param(chunk.text, id=f"{path.relative_to(SNAX)}:{chunk.index}"))
    return out


@dataclass(frozen=True)
class DropWait(ModulePass):
    """Erase the `index`-th syncproof.wait of the module (pre-order)."""

    name: ClassVar[str] = "test-drop-wait"
    index: int = 0

    def apply(self, ctx, op) -> None:
        waits = [o for o in op.walk() if op_name(o) == "syncproof.wait"]
        waits[self.index].parent_block().erase_op(waits[self.index])


@dataclass(frozen=True)
class DropSignal(ModulePass):
    """Erase the `index`-th syncproof.signal of the module (pre-order)."""

    name: ClassVar[str] = "test-drop-signal"
    index: int = 0

    def apply(self, ctx, op) -> None:
        signals = [o for o in op.walk() if op_name(o) == "syncproof.signal"]
        signals[self.index].parent_block().erase_op(signals[self.index])


class _TestOpt(SyncproofOptMain):
    def register_all_passes(self):
        super().register_all_passes()
        for test_pass in (DropWait, DropSignal):
            self.register_pass(test_pass.name, lambda p=test_pass: p)


def run_opt(text: str, passes: str, tmp_path: Path) -> str:
    """`syncproof-opt --allow-unregistered-dialect -p PASSES` on `text`: the output text.
    Exceptions of the passes propagate."""
    source, target = tmp_path / "in.mlir", tmp_path / "out.mlir"
    source.write_text(text)
    _TestOpt(args=["--allow-unregistered-dialect", "-p", passes, str(source), "-o", str(target)]).run()
    return target.read_text()


def program_of(text: str):
    (case,) = import_text(text, "out.mlir")
    return case.program

