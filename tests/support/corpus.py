"""Where the test data lives, and the kernel corpus the strategy tests run over."""

from __future__ import annotations

import re
from pathlib import Path

from semantics.ir import Program

ROOT = Path(__file__).resolve().parents[2]
KERNELS_DIR = ROOT / "kernels"
DATA_DIR = ROOT / "tests" / "data"
CASES_DIR = DATA_DIR / "threshold_cases"
# kernels/suite is the timing bench's (tests/verify/timing/test_timing.py)
CORPUS = sorted(KERNELS_DIR.glob("*.sync")) + sorted((KERNELS_DIR / "bugs").glob("*.sync"))
CASES = sorted(CASES_DIR.glob("*.sync"))
ALL_KERNELS = CORPUS + CASES
# Kernels with DMA queues (`queue`, `via`), each with `# expect:` lines as in kernels/
# (tests/algorithm/test_dma_strategies.py); kernels/dma_trigger.sync is in CORPUS.
DMA_DIR = DATA_DIR / "dma"
DMA_KERNELS = sorted(DMA_DIR.glob("*.sync")) + [KERNELS_DIR / "dma_trigger.sync"]

HI = 3  # every parameter over 0..HI unless stated otherwise


def kernel_id(path: Path) -> str:
    """A short test id: the path below kernels/ or tests/data/."""
    return path.relative_to(KERNELS_DIR if path.is_relative_to(KERNELS_DIR) else DATA_DIR).as_posix()


def bounds_of(program: Program, hi: int = HI):
    return tuple((p.name, 0, hi) for p in program.params)


def expectations(path) -> dict[str, list[str]]:
    """The `# expect[-KIND]: VALUE` lines of a kernel (the format of tests/test_corpus.py)."""
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^\s*#\s*expect((?:-[a-z]+)?)\s*:\s*(.*?)\s*$", line)
        if match:
            found.setdefault(match.group(1), []).append(match.group(2))
    return found


def expect_with_params(args: list[str]) -> dict[str, tuple[int, int]]:
    """The `--param NAME=LO..HI` (or `NAME=V`) flags of an `# expect-with:` line, split
    by shlex, as the `params` of syncproof.VerifyOptions."""
    assert len(args) % 2 == 0 and set(args[::2]) <= {"--param"}, f"only --param flags are read here: {args}"
    params = {}
    for spec in args[1::2]:
        name, _, value = spec.partition("=")
        lo, _, hi = value.partition("..")
        params[name] = (int(lo), int(hi or lo))
    return params
