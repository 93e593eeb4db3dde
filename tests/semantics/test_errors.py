"""Error reporting, xDSL style: every malformed input gives `FILE:LINE:COL: error: MESSAGE`
on stderr, exit status 2, and never a Python traceback (docs/design.md sections 5 and 6).

tests/data/errors/*.sync holds one small malformed kernel per error. The first line says what
is expected:

    # error: LINE:COL: SUBSTRING           `syncproof check` rejects the file
    # runtime-error: LINE:COL: SUBSTRING   `check` accepts it (exit 0); only
                                           `verify --strategy manual` (default bounds,
                                           every parameter over 0..3) rejects it

SUBSTRING is a distinctive piece of the message. An optional second line
`# xfail: REASON` marks a file whose expectation the implementation does not meet yet
(a known bug); the location test for that file is then a strict xfail, while the
invariants (exit 2, no traceback) are still asserted without xfail.

The command line runs in a fresh process, as a user runs it: the per-file commands all in
one child process that calls the command line's `main` once per command (an interpreter
start per file cost most of this module's time), the other commands each in their own
`python -m verify.cli`; the Hypothesis mutation test calls the parser in-process.
"""

from __future__ import annotations

import functools
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semantics.errors import KernelError
from semantics.parser import parse
from semantics.printer import print_program

from tests.support.corpus import DATA_DIR, ROOT

ERRORS = DATA_DIR / "errors"
KERNELS = ROOT / "kernels"

_HEADER = re.compile(r"^# (?P<kind>error|runtime-error): (?P<line>\d+):(?P<col>\d+): (?P<substring>.+?)\s*$")
_XFAIL = re.compile(r"^# xfail: (?P<reason>.+?)\s*$")
# What a reported error looks like, whatever the file name.
_ERROR_LINE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): error: \S")

_SMALL_KERNEL = """\
engines A B
param N
for i in 0..N {
  A produce writes x[i]
  B consume reads x[i] wait A >= i + 1
}
"""


# ---------------------------------------------------------------- helpers


class Expected:
    def __init__(self, path: Path):
        self.path = path
        self.rel = path.relative_to(ROOT).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        match = _HEADER.match(lines[0]) if lines else None
        if match is None:
            raise ValueError(f"{path}: first line must be '# error: LINE:COL: SUBSTRING' "
                             "or '# runtime-error: LINE:COL: SUBSTRING'")
        self.runtime = match["kind"] == "runtime-error"
        self.line, self.col = int(match["line"]), int(match["col"])
        self.substring = match["substring"]
        xfail = _XFAIL.match(lines[1]) if len(lines) > 1 else None
        self.xfail = xfail["reason"] if xfail else None

    def pattern(self) -> re.Pattern:
        return re.compile(rf"^{re.escape(self.rel)}:{self.line}:{self.col}: error: .*{re.escape(self.substring)}")


def _error_files() -> list[Path]:
    return sorted(ERRORS.glob("*.sync"))


def _params(runtime: bool, with_xfail: bool):
    params = []
    for path in _error_files():
        expected = Expected(path)
        if expected.runtime != runtime:
            continue
        marks = ()
        if with_xfail and expected.xfail:
            marks = (pytest.mark.xfail(strict=True, reason=expected.xfail),)
        params.append(pytest.param(expected, id=path.stem, marks=marks))
    return params


class Run:
    def __init__(self, status: int, stdout: str, stderr: str):
        self.status, self.stdout, self.stderr = status, stdout, stderr

    @classmethod
    def of(cls, completed: subprocess.CompletedProcess) -> Run:
        return cls(completed.returncode, completed.stdout.decode("utf-8", "replace"),
                   completed.stderr.decode("utf-8", "replace"))

    @property
    def first_error_line(self) -> str:
        return self.stderr.splitlines()[0] if self.stderr else ""

    def __repr__(self) -> str:
        return f"exit {self.status}\n--- stderr ---\n{self.stderr[-3000:]}\n--- stdout ---\n{self.stdout[-1000:]}"


def _cli(*args: str, timeout: float = 120) -> Run:
    """Run `syncproof ARGS` from the repository root, as a user would."""
    completed = subprocess.run([sys.executable, "-m", "verify.cli", *args], cwd=ROOT,
                               capture_output=True, timeout=timeout)
    return Run.of(completed)


# One child process runs many commands through the command line's `main`, each with its
# own stdout and stderr (main runs the command on a thread of its own; the streams are
# swapped process-wide while it runs).
_BATCH = """
import contextlib, io, json, sys
from verify.cli.main import main
out = []
for argv in json.loads(sys.stdin.read()):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = main(argv)
    out.append([status, stdout.getvalue(), stderr.getvalue()])
print(json.dumps(out))
"""


def _cli_batch(commands: list[tuple[str, ...]], timeout: float = 600) -> list[Run]:
    completed = subprocess.run([sys.executable, "-c", _BATCH], cwd=ROOT, input=json.dumps(commands),
                               capture_output=True, text=True, timeout=timeout, check=True)
    return [Run(*row) for row in json.loads(completed.stdout)]


def _commands_for(expected: Expected) -> list[tuple[str, ...]]:
    commands = [("check", expected.rel)]
    if expected.runtime:
        commands.append(("verify", "--strategy", "manual", expected.rel))
        commands.append(("verify", expected.rel))
    return commands


@functools.lru_cache(maxsize=None)
def _all_file_runs() -> dict[tuple[str, ...], Run]:
    """Every command the per-file tests need, run once, in one child process."""
    commands = [c for path in _error_files() for c in _commands_for(Expected(path))]
    return dict(zip(commands, _cli_batch(commands)))


def test_a_batched_command_answers_as_the_command_run_alone():
    """The batch's child process gives each command what `python -m verify.cli` gives it."""
    for path in _error_files()[::25]:
        for command in _commands_for(Expected(path)):
            alone, batched = _cli(*command), _run_cached(*command)
            assert (alone.status, alone.stdout, alone.stderr) == (batched.status, batched.stdout, batched.stderr)


def _run_cached(*args: str) -> Run:
    runs = _all_file_runs()
    return runs[args] if args in runs else _cli(*args)


def _assert_clean_failure(run: Run, filename: str | None = None) -> None:
    """Exit 2, a `FILE:LINE:COL: error:` first line on stderr, no traceback."""
    assert "Traceback" not in run.stderr, run
    assert run.status == 2, run
    match = _ERROR_LINE.match(run.first_error_line)
    assert match, f"first stderr line is not FILE:LINE:COL: error: ...\n{run}"
    if filename is not None:
        assert match["file"] == filename, run


# ---------------------------------------------------------------- the error files


def test_error_files_exist_and_have_a_header():
    files = _error_files()
    assert len(files) >= 40
    for path in files:
        Expected(path)  # raises on a malformed header
    assert any(Expected(p).runtime for p in files)


@pytest.mark.parametrize("expected", _params(runtime=False, with_xfail=True))
def test_malformed_kernel_reports_location_and_exits_2(expected: Expected):
    run = _run_cached("check", expected.rel)
    assert run.status == 2, run
    assert "Traceback" not in run.stderr, run
    assert expected.pattern().match(run.first_error_line), (
        f"expected {expected.rel}:{expected.line}:{expected.col}: error: ...{expected.substring}...\n{run}")


@pytest.mark.parametrize("expected", _params(runtime=False, with_xfail=False))
def test_malformed_kernel_exits_2_without_traceback(expected: Expected):
    """The invariant part of the above, never xfailed: even where the location or the
    wording is not yet what the file expects, the failure itself must be clean."""
    run = _run_cached("check", expected.rel)
    _assert_clean_failure(run, expected.rel)
    assert run.stdout == "", "a rejected kernel prints no program"


@pytest.mark.parametrize("expected", _params(runtime=True, with_xfail=False))
def test_runtime_error_kernel_is_accepted_by_check(expected: Expected):
    run = _run_cached("check", expected.rel)
    assert run.status == 0, run
    assert "Traceback" not in run.stderr, run


@pytest.mark.parametrize("expected", _params(runtime=True, with_xfail=True))
def test_runtime_error_reported_by_verify_with_location_and_exits_2(expected: Expected):
    run = _run_cached("verify", "--strategy", "manual", expected.rel)
    assert run.status == 2, run
    assert "Traceback" not in run.stderr, run
    assert expected.pattern().match(run.first_error_line), (
        f"expected {expected.rel}:{expected.line}:{expected.col}: error: ...{expected.substring}...\n{run}")


@pytest.mark.parametrize("expected", _params(runtime=True, with_xfail=False))
def test_runtime_error_in_verify_exits_2_without_traceback(expected: Expected):
    run = _run_cached("verify", "--strategy", "manual", expected.rel)
    _assert_clean_failure(run)


@pytest.mark.parametrize("expected", [p for p in _params(runtime=True, with_xfail=False) if "_in_wait" not in p.id])
def test_runtime_error_with_default_strategy_exits_2_without_traceback(expected: Expected):
    """The default strategy (threshold) inserts its own waits, so a run-time error in a
    written wait may vanish; one in a bound, an index or a condition may not. The strategy
    may print a summary on stderr first: the error line need not be the first line."""
    run = _run_cached("verify", expected.rel)
    assert "Traceback" not in run.stderr, run
    assert run.status == 2, run
    assert any(_ERROR_LINE.match(line) and expected.substring in line for line in run.stderr.splitlines()), run


def test_runtime_error_with_json_output_exits_2_without_traceback():
    run = _cli("verify", "--strategy", "manual", "--json", "tests/data/errors/runtime_division_by_zero.sync")
    _assert_clean_failure(run)
    assert "division by zero" in run.first_error_line


def test_runtime_error_outside_the_bounds_is_not_reported():
    """A divisor that is zero only at N = 1 is fine when N >= 2."""
    run = _cli("verify", "--strategy", "manual", "--param", "N=2..3", "tests/data/errors/runtime_division_by_zero.sync")
    assert run.status == 0, run


def test_static_error_is_reported_by_verify_too():
    run = _cli("verify", "--strategy", "manual", "tests/data/errors/unknown_engine_in_op.sync")
    _assert_clean_failure(run, "tests/data/errors/unknown_engine_in_op.sync")
    assert run.first_error_line.startswith("tests/data/errors/unknown_engine_in_op.sync:3:1: error: unknown engine 'C'")


# ---------------------------------------------------------------- files that are not kernels


def _write(tmp_path: Path, name: str, data: bytes | str) -> str:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return str(path)


def test_empty_file_reports_missing_engines_and_exits_2(tmp_path):
    path = _write(tmp_path, "empty.sync", b"")
    run = _cli("check", path)
    _assert_clean_failure(run, path)
    assert re.match(rf"^{re.escape(path)}:1:1: error: missing 'engines'", run.first_error_line), run


@pytest.mark.parametrize("seed", range(4))
def test_random_bytes_report_an_error_and_exit_2(tmp_path, seed):
    data = random.Random(seed).randbytes(4096)
    path = _write(tmp_path, f"garbage{seed}.sync", data)
    _assert_clean_failure(_cli("check", path), path)


def test_invalid_utf8_reports_the_byte_location_and_exits_2(tmp_path):
    path = _write(tmp_path, "latin1.sync", b"engines A B\nA op1 writes x \xe9\n")
    run = _cli("check", path)
    _assert_clean_failure(run, path)
    assert re.match(rf"^{re.escape(path)}:2:16: error: .*UTF-8", run.first_error_line), run


def test_nul_byte_reports_an_unexpected_character_and_exits_2(tmp_path):
    path = _write(tmp_path, "nul.sync", b"engines A B\nA op1\x00 writes x\n")
    run = _cli("check", path)
    _assert_clean_failure(run, path)
    assert re.match(rf"^{re.escape(path)}:2:6: error: unexpected character", run.first_error_line), run


def test_file_of_nul_bytes_reports_an_error_and_exits_2(tmp_path):
    path = _write(tmp_path, "nuls.sync", b"\x00" * 1000)
    _assert_clean_failure(_cli("check", path), path)


def test_huge_malformed_line_reports_the_column_and_exits_2(tmp_path):
    line = "A op1 writes " + "x" * 1_000_000 + " @"
    path = _write(tmp_path, "huge.sync", f"engines A B\n{line}\n")
    run = _cli("check", path)
    _assert_clean_failure(run, path)
    assert run.first_error_line.startswith(f"{path}:2:{len(line)}: error: unexpected character '@'"), run


def test_huge_valid_line_is_accepted(tmp_path):
    accesses = ", ".join(f"x{k}" for k in range(10_000))
    path = _write(tmp_path, "huge_ok.sync", f"engines A B\nA op1 writes {accesses} # {'c' * 1_000_000}\n")
    run = _cli("check", path)
    assert run.status == 0, run


def _nested(depth: int):
    """Deeply nested inputs, each (name, text, valid?)."""
    inner = "A op writes x\n"
    return {
        "parentheses": ("engines A B\nA op1 writes x[" + "(" * depth + "1" + ")" * depth + "]\n", True),
        "unclosed_parentheses": ("engines A B\nA op1 writes x[" + "(" * depth + "1]\n", False),
        "unary_minus": ("engines A B\nA op1 writes x[" + "-" * depth + "1]\n", True),
        "not": ("engines A B\nif " + "not " * depth + "1 < 2 {\n" + inner + "}\n", True),
        "if_expression": ("engines A B\nA op1 writes x[" + "if 1 < 2 then " * depth + "1" + " else 0" * depth + "]\n",
                          True),
        "long_sum": ("engines A B\nA op1 writes x[1" + " + 1" * depth + "]\n", True),
        "for_loops": ("engines A B\n" + "".join(f"for i{k} in 0..1 {{\n" for k in range(depth)) + inner
                      + "}\n" * depth, True),
        "if_blocks": ("engines A B\n" + "if 1 < 2 {\n" * depth + inner + "}\n" * depth, True),
        "unclosed_for_loops": ("engines A B\n" + "".join(f"for i{k} in 0..1 {{\n" for k in range(depth)) + inner,
                               False),
    }


_RECURSION = ("the parser, transformer or validator recurses once per nesting level and crashes "
              "with RecursionError (a traceback, exit 1)")
_DEEP_XFAIL: set[str] = set()  # all fixed: the CLI runs with a deep recursion limit and a large stack


@pytest.mark.parametrize("shape", [
    pytest.param(name, marks=(pytest.mark.xfail(strict=True, reason=_RECURSION),) if name in _DEEP_XFAIL else ())
    for name in _nested(1)
])
def test_deep_nesting_is_accepted_or_reported_without_traceback(tmp_path, shape):
    """5000 nested parentheses, 2000 levels of anything else (twice Python's default
    recursion limit): a valid kernel may be accepted or rejected with a clean error (a
    nesting limit), a malformed one must be rejected; never a traceback."""
    text, valid = _nested(5000 if "parentheses" in shape else 2000)[shape]
    path = _write(tmp_path, f"deep_{shape}.sync", text)
    run = _cli("check", path)
    assert "Traceback" not in run.stderr, run
    if valid and run.status == 0:
        return
    _assert_clean_failure(run, path)


def test_sum_of_600_terms_is_accepted(tmp_path):
    path = _write(tmp_path, "sum600.sync", "engines A B\nA op1 writes x[0" + " + 1" * 600 + "]\n")
    run = _cli("check", path)
    assert run.status == 0, run


def test_nonexistent_file_reports_an_error_and_exits_2(tmp_path):
    path = str(tmp_path / "no_such_kernel.sync")
    for command in (("check", path), ("verify", "--strategy", "manual", path)):
        run = _cli(*command)
        _assert_clean_failure(run, path)
        assert "cannot read" in run.first_error_line, run


def test_directory_instead_of_file_reports_an_error_and_exits_2(tmp_path):
    _assert_clean_failure(_cli("check", str(tmp_path)), str(tmp_path))


# ---------------------------------------------------------------- command-line usage


@pytest.fixture()
def small_kernel(tmp_path) -> str:
    return _write(tmp_path, "small.sync", _SMALL_KERNEL)


def _assert_usage_error(run: Run, *needles: str) -> None:
    assert "Traceback" not in run.stderr, run
    assert run.status == 2, run
    assert run.stderr.strip(), run
    for needle in needles:
        assert needle in run.stderr, run


def test_unknown_strategy_is_a_usage_error(small_kernel):
    _assert_usage_error(_cli("verify", "--strategy", "no-such-strategy", small_kernel),
                        "unknown strategy 'no-such-strategy'")


def test_param_for_undeclared_parameter_is_a_usage_error(small_kernel):
    _assert_usage_error(_cli("verify", "--strategy", "manual", "--param", "M=0..2", small_kernel), "M")


def test_param_with_empty_range_is_a_usage_error(small_kernel):
    _assert_usage_error(_cli("verify", "--strategy", "manual", "--param", "N=3..1", small_kernel), "N=3..1")


@pytest.mark.parametrize("spec", ["N=-1", "N", "N=a..b", "N=1..", "=1", "N=1.5"])
def test_malformed_param_is_a_usage_error(small_kernel, spec):
    _assert_usage_error(_cli("verify", "--strategy", "manual", "--param", spec, small_kernel))


def test_negative_max_param_is_a_usage_error(small_kernel):
    _assert_usage_error(_cli("verify", "--strategy", "manual", "--max-param", "-1", small_kernel))


def test_unknown_command_is_a_usage_error():
    _assert_usage_error(_cli("no-such-command"))


def test_missing_file_argument_is_a_usage_error():
    _assert_usage_error(_cli("check"))


@pytest.mark.parametrize("strategy", ["threshold", "barrier", "flags", "tokens", "snax-barrier", "manual"])
def test_every_design_strategy_runs_verify_to_a_sound_verdict(small_kernel, strategy):
    """Every strategy docs/design.md names is built: on the small kernel, `verify --property
    soundness` exits 0 (no usage error, no 'not yet available', no traceback)."""
    run = _cli("verify", "--strategy", strategy, "--property", "soundness", "--scope", "bounded",
               "--param", "N=0..2", small_kernel)
    assert "Traceback" not in run.stderr and "not yet available" not in run.stderr, run
    assert run.status == 0, run


def test_no_strategy_is_left_planned():
    from algorithm.registry import PLANNED

    assert PLANNED == {}


# ---------------------------------------------------------------- mutation fuzzing (in-process)


def _seed_kernels() -> list[str]:
    texts = [path.read_text(encoding="utf-8") for path in sorted(KERNELS.glob("*.sync"))]
    return texts or [_SMALL_KERNEL]


_FRAGMENTS = list("{}()[],.<>=+-*/%#\n \t0123456789aAiNx_é\x00\r") + [
    "..", ">=", "//", "if ", "for ", " in ", " then ", " else ", "} else {", "{\n", "\n}", "iters(", "min(",
    "max(", "wait ", "lat ", "reads ", "writes ", "barrier", "engines ", "param ", "kernel ", "1.5", " and ",
    " not ", " or ",
]


@st.composite
def _mutants(draw) -> str:
    text = draw(st.sampled_from(_seed_kernels()))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "replace"]))
        if kind == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 8)):]
        elif kind == "insert":
            text = text[:pos] + draw(st.sampled_from(_FRAGMENTS)) + text[pos:]
        else:
            text = text[:pos] + draw(st.sampled_from(_FRAGMENTS)) + text[pos + 1:]
    return text


@given(_mutants())
def test_mutated_kernel_is_accepted_or_reported_with_a_location(text):
    """Only KernelError escapes the parser; its location lies inside the text and it
    renders as FILE:LINE:COL: error: MESSAGE. What is accepted prints and re-parses."""
    try:
        program = parse(text, "mutant.sync")
    except KernelError as err:
        rendered = err.render()
        match = _ERROR_LINE.match(rendered)
        assert match and match["file"] == "mutant.sync", rendered
        assert "\n" not in rendered, rendered
        lines = (text if text.endswith("\n") else text + "\n").split("\n")
        line, col = int(match["line"]), int(match["col"])
        assert 1 <= line <= max(1, len(lines) - 1), rendered
        assert 1 <= col <= len(lines[line - 1]) + 1, rendered
        return
    printed = print_program(program)
    assert print_program(parse(printed, "printed.sync")) == printed
