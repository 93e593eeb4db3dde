"""The Lean 4 export (`syncproof lean`, lean_export/).

No Lean toolchain can be installed here, so the gates are: golden files for the whole
export of every corpus kernel, exact-text printer tests, a structural check of every
emitted file (balanced brackets and comments, every name used is defined in the
package or in the list of core Lean names below), determinism, and the command line;
the mirror of the Lean definitions is the semantic gate (test_lean_mirror.py).
When `lake` is on PATH, one export is built and any error other than the marked
`sorry`s fails the test; otherwise that test is skipped with the reason.

Regenerate the golden files after an intended change with
    SYNCPROOF_UPDATE_GOLDEN=1 python -m pytest -q tests/lean_export/test_lean_export.py
and review the diff.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import lean_export.printer as printer
import syncproof
from lean_export.export import LIBRARY_MODULES, export_files
from verify.api.lean import plan_instances
from semantics.ir import (
    Access, And, Barrier, BinOp, Compare, Const, For, If, IfExpr, Iters, Max, Min, Neg, Not, Op, Or, Param,
    Program, Queue, Range, Var, Wait, ops,
)
from semantics.parser import parse, parse_file
from verify.cli.main import main

from tests.lean_export.lean_machines import check as lean_check
from tests.lean_export.lean_terms import read_module

from tests.support.corpus import DATA_DIR, ROOT

# The corpus, its bugs, the suite kernels that export in about a second (range
# accesses, latency expressions), and tests/data/lean_cases (replica groups with ranges,
# a DMA transfer with a producer and an increment).
KERNELS = (sorted((ROOT / "kernels").glob("*.sync")) + sorted((ROOT / "kernels" / "bugs").glob("*.sync"))
           + [ROOT / "kernels" / "suite" / f"{name}.sync" for name in ("layernorm", "paged_decode_attention", "rmsnorm")]
           + sorted((DATA_DIR / "lean_cases").glob("*.sync")))
GOLDEN = DATA_DIR / "lean_golden"
UPDATE = os.environ.get("SYNCPROOF_UPDATE_GOLDEN") == "1"
SHARED = "_shared"  # files that are the same for every kernel (library, lakefile, toolchain)

# An unsynchronized kernel exported with the threshold strategy (the default).
THRESHOLD_KERNEL = """\
kernel tiny_pipe
engines LD PE
param N
for i in 0..N {
  for j in 0..i + 1 {
    LD load writes a[j % 2]
    PE mm   reads a[j % 2] writes acc
  }
}
if N > 1 {
  LD tail reads acc
}
"""


def _export(path: Path, strategy: str | None = None) -> dict[str, str]:
    """Hand-synchronized kernels (any wait or barrier) as written, others through `threshold`."""
    program = parse_file(str(path))
    synced = any(op.waits for op in ops(program)) or "barrier" in path.read_text()
    return export_files(program, path.name, strategy or ("manual" if synced else "threshold"), 2,
                        planner=plan_instances)


def _golden_cases():
    def case(path):
        base = ROOT / "kernels" if path.is_relative_to(ROOT / "kernels") else DATA_DIR
        return path.relative_to(base).with_suffix("").as_posix()

    return [(case(path), path) for path in KERNELS]


def _compare(expected_dir: Path, files: dict[str, str]) -> None:
    if UPDATE:
        if expected_dir.exists():
            shutil.rmtree(expected_dir)
        for rel, text in files.items():
            target = expected_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return
    assert expected_dir.exists(), f"no golden files in {expected_dir} (set SYNCPROOF_UPDATE_GOLDEN=1)"
    stored = {p.relative_to(expected_dir).as_posix() for p in expected_dir.rglob("*") if p.is_file()}
    assert stored == set(files), f"file set differs from {expected_dir}"
    for rel, text in files.items():
        assert (expected_dir / rel).read_text(encoding="utf-8") == text, f"{expected_dir / rel} differs"


def _split(files: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    own = {k: v for k, v in files.items() if k.startswith("Kernels")}
    shared = {k: v for k, v in files.items() if not k.startswith("Kernels")}
    return own, shared


@pytest.mark.parametrize("case,path", _golden_cases(), ids=[c for c, _ in _golden_cases()])
def test_golden_export(case, path):
    own, shared = _split(_export(path))
    _compare(GOLDEN / case, own)
    if not UPDATE:
        _compare(GOLDEN / SHARED, shared)
    elif case == _golden_cases()[0][0]:
        _compare(GOLDEN / SHARED, shared)


def test_golden_threshold_export(tmp_path):
    source = tmp_path / "tiny_pipe.sync"
    source.write_text(THRESHOLD_KERNEL)
    own, _ = _split(export_files(parse(THRESHOLD_KERNEL), source.name, "threshold", 2, planner=plan_instances))
    _compare(GOLDEN / "threshold_tiny_pipe", own)
    text = own["Kernels/TinyPipe.lean"]
    # (a tracked-count threshold; `.iters` is exported in the nested_dynamic and layernorm goldens)
    assert "waits := [" in text and ".count" in text and "theorem tinyPipe_bisim :" in text
    module = read_module(text)
    assert module.claims and all(c.expected for c in module.claims)
    assert all(lean_check(module.programs["tinyPipe"], c.valuation) for c in module.claims)


def test_export_is_deterministic():
    path = ROOT / "kernels" / "ring_buffer.sync"
    assert _export(path) == _export(path)
    assert list(_export(path)) == sorted(_export(path))


# ------------------------------------------------------------------ printer


def test_printer_doctests():
    result = doctest.testmod(printer)
    assert result.failed == 0 and result.attempted >= 5


@pytest.mark.parametrize("node,text", [
    (Const(3), ".const 3"),
    (Const(-1), ".const (-1)"),
    (Var("N"), '.var "N"'),
    (Iters("i"), '.iters "i"'),
    (BinOp("+", Var("i"), Const(1)), '.add (.var "i") (.const 1)'),
    (BinOp("-", Var("i"), Const(1)), '.sub (.var "i") (.const 1)'),
    (BinOp("*", Var("i"), Const(2)), '.mul (.var "i") (.const 2)'),
    (BinOp("//", Var("i"), Const(2)), '.fdiv (.var "i") (.const 2)'),
    (BinOp("%", Var("i"), BinOp("+", Var("D"), Const(1))), '.fmod (.var "i") (.add (.var "D") (.const 1))'),
    (Neg(Var("i")), '.neg (.var "i")'),
    (Min(Var("a"), Const(0)), '.min (.var "a") (.const 0)'),
    (Max(Var("a"), Const(0)), '.max (.var "a") (.const 0)'),
    (Compare("<=", Var("i"), Var("N")), '.cmp .le (.var "i") (.var "N")'),
    (Compare("!=", Var("i"), Const(0)), '.cmp .ne (.var "i") (.const 0)'),
    (And(Compare("==", Var("a"), Const(0)), Not(Compare(">", Var("b"), Const(1)))),
     '.and (.cmp .eq (.var "a") (.const 0)) (.not (.cmp .gt (.var "b") (.const 1)))'),
    (Or(Compare("<", Var("a"), Const(0)), Compare(">=", Var("a"), Const(2))),
     '.or (.cmp .lt (.var "a") (.const 0)) (.cmp .ge (.var "a") (.const 2))'),
    (IfExpr(Compare("==", Var("i"), Const(0)), Const(0), Iters("j")),
     '.ite (.cmp .eq (.var "i") (.const 0)) (.const 0) (.iters "j")'),
])
def test_print_expr(node, text):
    assert printer.lean_expr(node) == text


def test_print_access_wait_op():
    assert printer.lean_access(Access("a", (BinOp("%", Var("i"), Const(2)),))) == \
        '⟨"a", [.elem (.fmod (.var "i") (.const 2))]⟩'
    assert printer.lean_access(Access("x", (Var("r"), Range(Const(0), Var("C"))))) == \
        '⟨"x", [.elem (.var "r"), .range (.const 0) (.var "C")]⟩'
    assert printer.lean_access(Access("total")) == '⟨"total", []⟩'
    assert printer.lean_wait(Wait("PE", BinOp("+", Var("i"), Const(1)))) == '⟨"PE", .add (.var "i") (.const 1)⟩'
    assert printer.lean_op(Op("PE", "mm", reads=(Access("a"),), writes=(Access("o"),), lat=256,
                              waits=(Wait("LD", Const(1)),))) == \
        '.op { engine := "PE", name := "mm", reads := [⟨"a", []⟩], writes := [⟨"o", []⟩], lat := .const 256, ' \
        'waits := [⟨"LD", .const 1⟩] }'
    assert printer.lean_op(Op("LD", "load")) == '.op { engine := "LD", name := "load" }'
    assert printer.lean_op(Op("SP", "ld", lat=BinOp("*", Const(2), Var("N")), queue="q0", replica="g")) == \
        '.op { engine := "SP", name := "ld", lat := .mul (.const 2) (.var "N"), via := some "q0", replica := some "g" }'


def test_print_statements():
    loop = For("i", Const(0), Var("N"), (Op("LD", "load"), Barrier()))
    assert printer.lean_stmt(loop) == (
        '.loop "i" (.const 0) (.var "N")\n'
        '  (block [\n'
        '    .op { engine := "LD", name := "load" },\n'
        '    .barrier\n'
        '  ])')
    cond = If(Compare(">", Var("N"), Const(2)), (Op("PE", "extra"),), ())
    assert printer.lean_stmt(cond) == (
        '.cond (.cmp .gt (.var "N") (.const 2))\n'
        '  (block [\n'
        '    .op { engine := "PE", name := "extra" }\n'
        '  ])\n'
        '  (block [])')


def test_print_program_and_names():
    program = Program(("A", "B"), (), (Op("A", "x"),), name="two")
    assert printer.lean_program(program, "two", "two") == (
        'def two : Program :=\n'
        '  { name := "two",\n'
        '    engines := ["A", "B"],\n'
        '    params := [],\n'
        '    body := (block [\n'
        '      .op { engine := "A", name := "x" }\n'
        '    ]) }')
    queued = Program(("A", "q"), (Param("K", lower=1),), (Op("A", "x", queue="q"),), queues=(Queue("q", 16),))
    assert printer.lean_program(queued, "k", "k").splitlines()[2:5] == [
        '    engines := ["A", "q"],', '    queues := [("q", 16)],', '    params := [("K", 1)],']
    assert printer.camel_name("matmul_db") == "matmulDb"
    assert printer.camel_name("theorem") == "«theorem»"
    assert printer.module_name("six_engine_block") == "SixEngineBlock"
    assert printer.valuation_suffix([]) == "unit"
    assert printer.lean_string('x\\y') == '"x\\\\y"'


def test_floor_division_definition_matches_python():
    """Semantics.lean defines floorDiv from Int.ediv (remainder always non-negative);
    check that definition, transcribed, against Python's // and % (the kernel language)."""

    def ediv(x, y):  # Lean's Int.ediv: x = y * q + r with 0 <= r < |y| (y != 0)
        q = x // y if y > 0 else -(x // -y)
        if x - y * q < 0:
            q += 1 if y < 0 else -1
        return q

    def floor_div(x, y):
        return ediv(-x, -y) if y < 0 else ediv(x, y)

    for x in range(-9, 10):
        for y in [v for v in range(-4, 5) if v]:
            r = x - y * ediv(x, y)
            assert 0 <= r < abs(y)
            assert floor_div(x, y) == x // y
            assert x - y * floor_div(x, y) == x % y


# ----------------------------------------------------------- structural check

# Core Lean 4 (v4.9.0) names the export relies on, beyond its own definitions.
# Every entry was checked against the Lean 4 core library (Init) of that release.
CORE_NAMES = frozenset("""
    Nat Int Bool String List Option Prop Type true false some none decide
    Int.ofNat Int.ediv Int.toNat Lake DSL
""".split())
# Methods used through generalized field notation (`xs.map f`, `o.isSome`).
CORE_METHODS = frozenset("""
    map all any foldl filterMap length take drop isSome isNone toNat range 1 2
""".split())
# Lean keywords, tactic names and attributes the files contain.
LEAN_SYNTAX = frozenset("""
    import namespace open end def theorem abbrev structure inductive where deriving
    fun match with if then else let by sorry native_decide in mk
    Repr DecidableEq default_target package lean_lib syncproof
""".split())

_TOKEN = re.compile(r"«[^»]*»|\.?[A-Za-z_][A-Za-z0-9_'!?]*(?:\.(?:[A-Za-z_][A-Za-z0-9_'!?]*|[0-9]+))*|\.[0-9]+")


def _strip(text: str) -> str:
    """Remove comments (block comments nest) and string contents; fail on imbalance."""
    out, i, depth = [], 0, 0
    while i < len(text):
        two = text[i:i + 2]
        if two == "/-":
            depth, i = depth + 1, i + 2
            continue
        if depth and two == "-/":
            depth, i = depth - 1, i + 2
            continue
        assert not two == "-/", "'-/' outside a comment"
        if depth:
            i += 1
            continue
        if two == "--":
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        if text[i] == '"':
            j = i + 1
            while text[j] != '"':
                assert text[j] != "\n", "unterminated string"
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
            continue
        out.append(text[i])
        i += 1
    assert depth == 0, "unterminated block comment"
    return "".join(out)


def _balanced(code: str) -> None:
    pairs = {")": "(", "]": "[", "}": "{", "⟩": "⟨"}
    stack = []
    for n, ch in enumerate(code):
        if ch in "([{⟨":
            stack.append(ch)
        elif ch in pairs:
            assert stack and stack[-1] == pairs[ch], f"unbalanced '{ch}' at offset {n}"
            stack.pop()
    assert not stack, f"unclosed {stack}"


def _definitions(code: str) -> set[str]:
    """Names a Lean file introduces: declarations, constructors, fields and binders."""
    names: set[str] = set()
    for kind, name in re.findall(r"\b(def|theorem|abbrev|structure|inductive)\s+([^\s(:{]+)", code):
        names.add(name)
    names.update(re.findall(r"^\s*\|\s*([a-z][A-Za-z0-9_]*)", code, re.M))  # constructors / patterns
    names.update(re.findall(r"\|\s+(\w+(?:\s+\w+)*)\s*(?:\(|$)", code, re.M))
    for group in re.findall(r"^\s*\|((?:\s+[a-z]\w*)+)\s*$", code, re.M):  # `| eq | ne | lt`
        names.update(group.split())
    for line in re.findall(r"^\s+\|.*$", code, re.M):
        names.update(re.findall(r"\|\s*([a-z]\w*)", line))
    names.update(re.findall(r"^\s+([a-zA-Z]\w*)\s*:", code, re.M))  # structure fields
    for group in re.findall(r"[(⟨{]\s*([A-Za-z_][\w ]*?)\s*:(?!=)", code):  # binders (a b : T)
        names.update(group.split())
    for group in re.findall(r"(?:fun|∀|∃)\s+([^=,→:]+?)\s*(?:=>|,|:)", code):
        names.update(re.findall(r"[A-Za-z_][\w']*", group))
    names.update(re.findall(r"\blet\s+([\w']+)", code))
    for group in re.findall(r"\blet\s+\(([^)]*)\)", code):
        names.update(re.findall(r"[\w']+", group))
    for arm in re.findall(r"^\s*\|(.*?)=>", code, re.M):  # pattern variables of match arms
        names.update(re.findall(r"[a-z_][\w']*", arm))
    return names


def _library_files() -> dict[str, str]:
    files = _export(ROOT / "kernels" / "pipeline_db.sync")
    return {k: v for k, v in files.items() if k.startswith("Syncproof/")}


def _check_names(rel: str, code: str, defined: set[str]) -> None:
    known = defined | CORE_NAMES | LEAN_SYNTAX
    unknown = set()
    for token in _TOKEN.findall(code):
        if token.startswith("«"):
            continue
        if token.startswith("."):  # `.ctor` or a projection `.1`
            if token[1:] not in known and token[1:] not in CORE_METHODS:
                unknown.add(token)
            continue
        head, *rest = token.split(".")
        if token in known or (head[0].isupper() and head in known and all(r in known for r in rest)):
            continue
        if head in known and all(r in known or r in CORE_METHODS for r in rest):
            continue
        unknown.add(token)
    assert not unknown, f"{rel}: names defined nowhere: {sorted(unknown)}"


@pytest.mark.parametrize("path", KERNELS, ids=[p.stem for p in KERNELS])
def test_structure_of_every_file(path):
    files = _export(path)
    library = "".join(_strip(v) for k, v in files.items() if k.startswith("Syncproof/"))
    library_names = _definitions(library)
    for rel, text in files.items():
        if rel == "lean-toolchain":
            assert re.fullmatch(r"leanprover/lean4:v\d+\.\d+\.\d+\n", text)
            continue
        code = _strip(text)
        _balanced(code)
        own = _definitions(code)
        _check_names(rel, code, library_names | own | {"Syncproof", "Kernels"} | set(_module_parts(files)))
        # every `sorry` in code is a marked proof obligation
        assert len(re.findall(r"\bsorry\b", code)) == text.count("sorry -- PROOF OBLIGATION"), rel


def _module_parts(files):
    for rel in files:
        if rel.endswith(".lean") and "/" in rel:
            yield from Path(rel).with_suffix("").parts


def test_library_modules_are_shipped_and_core_only():
    library = _library_files()
    assert set(library) == {f"Syncproof/{m}.lean" for m in LIBRARY_MODULES}
    for rel, text in library.items():
        code = _strip(text)
        imports = re.findall(r"^import\s+(\S+)", code, re.M)
        assert all(i.startswith("Syncproof.") for i in imports), f"{rel} imports {imports}"
        assert "partial def" not in code and "macro" not in code and "syntax" not in code
        # Int division must go through floorDiv/floorMod (Python floor semantics).
        assert "Int.div " not in code and "Int.fdiv" not in code


def test_claims_follow_the_python_checker():
    bug = _export(ROOT / "kernels" / "bugs" / "ring_off_by_one.sync")["Kernels/RingOffByOne.lean"]
    assert "theorem ringOffByOne_bisim :" not in bug
    assert "def ringOffByOne_bisim_statement : Prop :=" in bug
    assert "verdict unsound at N=2, D=0" in bug
    assert 'check ringOffByOne [("N", 2), ("D", 0)] = false := by native_decide' in bug
    good = _export(ROOT / "kernels" / "pipeline_db.sync")["Kernels/PipelineDb.lean"]
    assert "theorem pipelineDb_bisim : ∀ v : Valuation, ValidValuation pipelineDb v →" in good
    assert "  sorry -- PROOF OBLIGATION: bisimilarity for all parameter values" in good
    assert 'theorem pipelineDb_check_N2 : check pipelineDb [("N", 2)] = true := by native_decide' in good


# -------------------------------------------------------------- command line


def test_cli_writes_project(tmp_path, capsys):
    out = tmp_path / "proj"
    assert main(["lean", str(ROOT / "kernels" / "pipeline_db.sync"), "--strategy", "manual", "-o", str(out)]) == 0
    assert (out / "lean-toolchain").exists() and (out / "lakefile.lean").exists()
    assert (out / "Kernels" / "PipelineDb.lean").exists() and (out / "Syncproof" / "Check.lean").exists()


def test_cli_errors(tmp_path, capsys):
    kernel = str(ROOT / "kernels" / "pipeline_db.sync")
    assert main(["lean", kernel]) == 2  # -o is required
    assert main(["lean", kernel, "--strategy", "nope", "-o", str(tmp_path)]) == 2
    assert "syncproof: error: unknown strategy" in capsys.readouterr().err
    assert main(["lean", kernel, "--max-param", "-1", "-o", str(tmp_path)]) == 2
    assert "syncproof: error:" in capsys.readouterr().err


# --------------------------------------------------------------- Lean build


@pytest.mark.skipif(shutil.which("lake") is None or shutil.which("lean") is None,
                    reason="no Lean 4 toolchain (lean/lake) on PATH: the export is checked by golden "
                           "files and the structural check only")
def test_lake_build(tmp_path):
    out = tmp_path / "proj"
    syncproof.export_lean(syncproof.load(ROOT / "kernels" / "ring_buffer.sync"), out, strategy="manual")
    run = subprocess.run(["lake", "build"], cwd=out, capture_output=True, text=True, timeout=1800)
    log = run.stdout + run.stderr
    errors = [line for line in log.splitlines() if "error" in line.lower()]
    assert run.returncode == 0 and not errors, log
    warnings = [line for line in log.splitlines() if "warning" in line.lower()]
    unexpected = [w for w in warnings if "declaration uses 'sorry'" not in w and "unused variable" not in w]
    assert not unexpected, log
