"""CLI fuzz test, the tier that catches crashes of the command line itself: Hypothesis
draws argv for every subcommand, with valid and invalid flag values, missing, extra,
unreadable and malformed files, generated kernels (verify.search.generators.programs
printed to files), `.sync` and `.mlir` files in every command, and checks:
- the exit status is one of 0, 1, 2, 3 (docs/cli.md);
- no traceback, and no "internal error" (a bug in syncproof);
- exit 2 ends with exactly one error line: `FILE:LINE:COL: error: ...` or
  `syncproof[ COMMAND]: error: ...`.
Runs in-process (verify.cli.main.main with capsys); a few cases run as a subprocess,
so that the real process exit status and stderr are checked too.

Two tiers of argv: `invocations` knows each command's flags and mostly valid values
(the run does real work); `fuzzed` is generic: it enumerates the subcommands and their
options from the argparse parser itself, so a new subcommand or option is fuzzed without
a change here, and draws random subsets of the options with odd values (negative, huge,
non-numeric, empty, unknown names, missing files, directories), and kernels that are
generated with every language feature (verify.search.rich) or malformed (truncated or
mutated text)."""

import argparse
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from semantics.printer import print_program
from verify.cli import mlir as cli_mlir
from verify.cli.main import build_parser, main
from verify.search.generators import programs
from verify.search.rich import rich_programs

ROOT = Path(__file__).parents[3]
DATA = ROOT / "tests" / "data"
ERROR = re.compile(r"^(\S.*:\d+:\d+: error: .+|syncproof( [a-z-]+)?: error: .+)$")
STRATEGIES = ["threshold", "barrier", "flags", "tokens", "manual", "snax-barrier", "oracle", "nope", ""]
GENERATED = programs(engines=(1, 3), max_depth=2, synced=False, params=(0, 2), max_param=2,
                     max_instances=8, max_statements=3)
SYNCED = programs(engines=(1, 3), max_depth=2, synced=True, params=(0, 2), max_param=2,
                  max_instances=8, max_statements=3)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Named input files that do not depend on the draw."""
    base = tmp_path_factory.mktemp("fuzz")
    (base / "a_dir.sync").mkdir()
    (base / "binary.sync").write_bytes(b"\xff\xfe\x00engines")
    (base / "empty.sync").write_text("")
    (base / "garbage.mlir").write_text("this is not MLIR {{{\n")
    (base / "two.mlir").write_text((DATA / "cli" / "tiny.mlir").read_text() + "\n// -----\n"
                                   + (DATA / "cli" / "tiny.mlir").read_text())
    (base / "bad_profile.toml").write_text("clock_ghz = 'fast'\n")
    (base / "a_file").write_text("")
    return {
        "tiny.sync": str(DATA / "cli" / "tiny.sync"),
        "tiny.mlir": str(DATA / "cli" / "tiny.mlir"),
        "two.mlir": str(base / "two.mlir"), "two.mlir:2": str(base / "two.mlir") + ":2",
        "two.mlir:7": str(base / "two.mlir") + ":7",
        "missing.sync": str(base / "missing.sync"), "missing.mlir": str(base / "missing.mlir"),
        "a_dir.sync": str(base / "a_dir.sync"), "binary.sync": str(base / "binary.sync"),
        "empty.sync": str(base / "empty.sync"), "garbage.mlir": str(base / "garbage.mlir"),
        "loop_bounds": str(DATA / "loop_bounds" / "negative_lower_bound.sync"),
        "bad_profile": str(base / "bad_profile.toml"), "a_file": str(base / "a_file"),
        "base": str(base),
    }


def _flag(name, good, bad=(), valid=True):
    """No flag, or the flag with a good value (or, unless `valid`, a bad one)."""
    values = list(good) + ([] if valid else list(bad))
    return st.one_of(st.just([]), st.sampled_from(values).map(lambda v: [name, str(v)]))


def _switch(name):
    return st.sampled_from([[], [name]])


def argv_for(command, kernel, files, out, valid):
    """A strategy of argv lists for `command`, with `kernel` a drawn input file; with
    `valid`, every flag value is a valid one (the run then does real work)."""
    def flag(name, good, bad=()):
        return _flag(name, good, bad, valid)

    strategy = flag("--strategy", ["threshold", "barrier", "flags", "tokens", "manual", "snax-barrier"],
                    ["oracle", "nope", ""])
    params = ["N=0..1", "N=1", "N=1..2"] + ([] if valid else ["M=0..1", "N=2..1", "N=x", "Q=1", "N=-1"])
    param = st.lists(st.sampled_from(params), max_size=1 if valid else 2).map(
        lambda ps: [a for p in ps for a in ("--param", p)])
    max_param = flag("--max-param", [0, 1, 2], [-1, "x"])
    seconds = ([5, 2.5], [0, -1, "x", "nan"])
    out_path = st.sampled_from([out, os.path.join(out, "sub", "x")]
                               + ([] if valid else [files["a_file"], files["a_dir.sync"]]))
    parts = {
        "check": [],
        "sync": [strategy, flag("--emit", ["sync", "mlir"], ["c"]), st.one_of(st.just([]), out_path.map(
            lambda p: ["-o", p]))],
        "verify": [strategy, param, max_param, flag("--engine", ["explicit", "z3", "both"], ["x"]),
                   flag("--property", ["bisimulation", "soundness"], ["x"]),
                   flag("--max-states", [50, 100000], [0, -5]), flag("--timeout", *seconds),
                   st.one_of(st.just([]), out_path.map(lambda p: ["--dump-smt", p])),
                   flag("--scope", ["auto", "bounded"], ["all"]),
                   st.just(["--proof-timeout", "3"]) if valid else flag("--proof-timeout", [3], [0, "x"]),
                   _switch("--json"), _switch("--verbose")],
        "simulate": [flag("--strategy", ["threshold", "barrier", "oracle", "manual"], ["nope"]),
                     param.map(lambda a: [x.split("..")[0] for x in a]),
                     flag("--profile", ["trainium", "snax"], ["nope", files["bad_profile"]]),
                     st.one_of(st.just([]), out_path.map(lambda p: ["--trace", p])), _switch("--json")],
        "bench": [flag("--profile", ["trainium", "snax"], ["nope"]),
                  st.one_of(st.just([]), out_path.map(lambda p: ["--out", p])), _switch("--json")],
        "search": [strategy, flag("--examples", [1, 2], [0, -1, "x"]), flag("--seed", [0, 7], ["x"]),
                   flag("--max-param", [0, 1], [-1]), flag("--property", ["bisimulation", "soundness"]),
                   st.one_of(st.just([]), out_path.map(lambda p: ["--out", p])), _switch("--json")],
        "mutate": [strategy, param, flag("--max-param", [0, 1], [-1]), flag("--max-states", [1000], [0]),
                   _switch("--json")],
        "lean": [strategy, st.sampled_from([["-o", out]] + ([] if valid else [["-o", files["a_file"]], []])),
                 flag("--max-param", [0, 1], [-1])],
        "import-mlir": [st.one_of(st.just([]), out_path.map(lambda p: ["-o", p])),
                        flag("--case", [1, 2], [0, 9, "x"])],
    }[command]
    if command == "search":
        positional = st.just([]) if valid else st.sampled_from([[], ["extra.sync"]])
        parts = [st.just(["--examples", "2"])] + parts  # a later --examples overrides: bounded either way
    elif command == "bench":
        other = files["tiny.sync"] if ".mlir" in kernel else files["tiny.mlir"]  # .sync with .mlir: columns differ
        positional = st.sampled_from([[kernel, other], [kernel]] + ([] if valid else [[files["missing.sync"]]]))
    else:
        positional = st.just([kernel]) if valid else st.sampled_from([[kernel], [], [kernel, files["tiny.sync"]]])
    junk = st.just([]) if valid else st.sampled_from([[], ["--nope"], ["-x", "1"]])
    return st.tuples(positional, junk, *parts).map(lambda ps: [command] + [a for p in ps for a in p])


COMMANDS = ["check", "sync", "verify", "simulate", "bench", "search", "mutate", "lean", "import-mlir"]
GOOD = ["tiny.sync", "tiny.mlir", "two.mlir:2", "loop_bounds"]
BAD = ["two.mlir", "two.mlir:7", "missing.sync", "missing.mlir", "a_dir.sync", "binary.sync", "empty.sync",
       "garbage.mlir"]


@st.composite
def invocations(draw, files):
    command = draw(st.sampled_from(COMMANDS))
    valid = draw(st.booleans(), label="valid")
    out = os.path.join(files["base"], f"out{draw(st.integers(0, 3))}")
    source = draw(st.sampled_from(["generated", "synced"] + GOOD + ([] if valid else BAD)))
    if source in ("generated", "synced"):
        program = draw(GENERATED if source == "generated" else SYNCED)
        if draw(st.booleans(), label="defaults"):  # simulate and bench need `param N = value`
            program = attrs.evolve(program, params=tuple(attrs.evolve(p, default=draw(st.integers(0, 2)))
                                                         for p in program.params))
        kernel = os.path.join(files["base"], f"gen_{source}.sync")
        Path(kernel).write_text(print_program(program))
    else:
        kernel = files[source]
    return draw(argv_for(command, kernel, files, out, valid))


def check_outcome(argv, status, out, err):
    assert status in (0, 1, 2, 3), (argv, status, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    assert "internal error" not in err, (argv, err)
    if status == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        errors = [line for line in lines if ": error: " in line]
        assert len(errors) == 1 and lines[-1] == errors[0], (argv, err)
        assert ERROR.match(errors[0]), (argv, errors[0])


@pytest.mark.slow
@settings(max_examples=5 * settings.default.max_examples, deadline=None,  # cheap: 5x the profile's budget
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_every_command_exits_0_to_3_without_a_traceback(files, capsys, data):
    argv = data.draw(invocations(files), label="argv")
    capsys.readouterr()
    status = main(argv)
    captured = capsys.readouterr()
    event(f"{argv[0]} exits {status}" + (" --out" if "--out" in argv else ""))
    check_outcome(argv, status, captured.out, captured.err)


@pytest.mark.parametrize("argv", [
    ["verify", "--timeout", "0", "tests/data/cli/tiny.sync"],
    ["import-mlir", "tests/data/cli/tiny.sync"],
    ["lean", "tests/data/cli/tiny.mlir"],
    ["simulate", "--strategy", "nope", "tests/data/cli/tiny.sync"],
    ["check", "tests/data/cli/missing.sync"],
    ["nope"],
])
def test_the_real_process_exits_2_with_one_error_line(argv):
    run = subprocess.run([sys.executable, "-m", "verify.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    check_outcome(argv, run.returncode, run.stdout, run.stderr)
    assert run.returncode == 2


# ------------------------------------------------------------------ generic tier

SUBCOMMANDS = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
RICH = rich_programs(engines=(1, 3), max_depth=2, max_statements=3, max_instances=8, max_param=2, max_queues=2,
                     max_ops=5)
ODD = ["-1", "0", "-0", "1", "2", "0.5", "-2.5", "1e400", "nan", "inf", "99999999999999999999", "x", "", " ",
       "nope", "\u00e9", "N=0..1", "N=x", "N=2..1", "Q=1", "N=-1", "="]
# Appended after the fuzzed options, so that each run stays small (argparse: the last
# occurrence wins, and every earlier value is still parsed and checked).
CAPS = {"--max-param": "1", "--timeout": "10", "--proof-timeout": "10", "--max-states": "5000", "--examples": "2",
        "--workers": "1", "--proof-jobs": "1"}
# Options not fuzzed, and why: a valid address connects to a network scheduler.
NOT_FUZZED = {"--cluster"}
TOKENS = ["{", "}", "..", "%", "//", "-", "0", "99999999999", "wait", "for", "if", "else", "param", "engines",
          "\n", "@", ">=", "max(", ",", "\x00", "\u00e9", "queue", "via", "replica", "lat"]


@st.composite
def malformed(draw, program):
    """The program's text, truncated or mutated."""
    text = print_program(program)
    at = draw(st.integers(0, max(0, len(text) - 1)))
    match draw(st.sampled_from(["truncate", "replace", "insert", "drop line", "repeat line"])):
        case "truncate":
            return text[:at]
        case "replace":
            return text[:at] + draw(st.sampled_from(TOKENS)) + text[at + 1:]
        case "insert":
            return text[:at] + " " + draw(st.sampled_from(TOKENS)) + " " + text[at:]
        case "drop line":
            lines = text.splitlines(keepends=True)
            n = draw(st.integers(0, len(lines) - 1))
            return "".join(lines[:n] + lines[n + 1:])
        case "repeat line":
            lines = text.splitlines(keepends=True)
            n = draw(st.integers(0, len(lines) - 1))
            return "".join(lines[:n + 1] + lines[n:])


@st.composite
def kernel_file(draw, files, name):
    """A kernel file: generated (every language feature), synced, malformed, or one of
    the named inputs."""
    source = draw(st.sampled_from(["rich", "synced", "malformed", *GOOD, *BAD]))
    if source in GOOD or source in BAD:
        return files[source]
    program = draw(RICH if source == "rich" else SYNCED)
    if draw(st.booleans(), label="defaults"):  # simulate and bench need `param N = value`
        program = attrs.evolve(program, params=tuple(attrs.evolve(p, default=draw(st.integers(0, 2)))
                                                     for p in program.params))
    text = draw(malformed(program)) if source == "malformed" else print_program(program)
    path = os.path.join(files["base"], name)
    Path(path).write_text(text)
    return path


def _values(action, files, out):
    """Odd and ordinary values for one option: its choices, ODD, and paths (only under
    the test's own folder: an option may write its value's file)."""
    paths = [out, os.path.join(out, "sub", "x"), files["a_file"], files["a_dir.sync"], files["missing.sync"],
             files["base"]]
    return [*(str(c) for c in action.choices or ()), *ODD, *paths]


@st.composite
def fuzzed(draw, files):
    """argv for any subcommand of the parser: its positionals, a random subset of its
    options with odd values, maybe an unknown option, then CAPS."""
    command = draw(st.sampled_from(sorted(SUBCOMMANDS)))
    out = os.path.join(files["base"], f"out{draw(st.integers(0, 3))}")
    argv = [command]
    actions = [a for a in SUBCOMMANDS[command]._actions if not isinstance(a, argparse._HelpAction)]
    for action in actions:
        if action.option_strings:
            continue
        # "*": at least one (none means a default set, which can be large: `bench` alone
        # runs every kernel of the repository)
        count = {None: 1, "?": draw(st.integers(0, 1)), "*": draw(st.integers(1, 2)),
                 "+": draw(st.integers(1, 2))}.get(action.nargs, 1)
        count = draw(st.sampled_from([count, count, count, max(0, count - 1) if action.nargs == "*" else 0,
                                      count + 1]), label="positionals")
        argv += [draw(kernel_file(files, f"fuzz_{command}_{n}.sync")) for n in range(count)]
    options = [a for a in actions if a.option_strings and not NOT_FUZZED & set(a.option_strings)]
    for action in draw(st.lists(st.sampled_from(options), max_size=4, unique_by=id)) if options else []:
        name = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            argv.append(name)
        else:
            argv += [name, draw(st.sampled_from(_values(action, files, out)))]
    argv += draw(st.sampled_from([[], [], ["--nope"], ["--nope", "1"], ["-q"]]))
    given = {s for a in actions for s in a.option_strings}
    for name, value in CAPS.items():
        if name in given:
            argv += [name, value]
    return argv


def run_cli(argv):
    """(exit status, stdout, stderr) of one in-process run; the process's address-space
    limit (`--max-memory`) is restored after it."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    limit = resource.getrlimit(resource.RLIMIT_AS)
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 2
    finally:
        resource.setrlimit(resource.RLIMIT_AS, limit)
    return status, out.getvalue(), err.getvalue()


def run_in_test_folder(files, argv):
    """run_cli from the test's own folder: a relative path among the odd values (`--out
    -1`) names a folder there, never one in the repository."""
    import contextlib

    with contextlib.chdir(files["base"]):
        return run_cli(argv)


def test_a_relative_out_folder_of_a_fuzzed_run_is_made_in_the_test_folder(files):
    """Regression: the fuzzed runs ran in the caller's folder, and `bench --out -1` left
    a folder `-1` in the repository."""
    argv = ["bench", files["tiny.sync"], "--out", "-1"]
    status, out, err = run_in_test_folder(files, argv)
    check_outcome(argv, status, out, err)
    assert (Path(files["base"]) / "-1").is_dir()
    assert not (ROOT / "-1").exists()


def test_every_subcommand_of_the_parser_is_fuzzed():
    """The generic tier reads the subcommands from the parser: today's at least, and the
    hand-written tier names none the parser lacks."""
    assert set(COMMANDS) <= set(SUBCOMMANDS)
    assert {"check", "sync", "verify", "search", "simulate", "bench", "lean", "import-mlir"} <= set(SUBCOMMANDS)


@pytest.mark.slow
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_every_subcommand_with_fuzzed_flags_exits_0_to_3_without_a_traceback(files, data):
    argv = data.draw(fuzzed(files), label="argv")
    status, out, err = run_in_test_folder(files, argv)
    event(f"{argv[0]} exits {status}")
    check_outcome(argv, status, out, err)


@pytest.mark.parametrize("command", ["check", "sync", "verify", "simulate"])
def test_teeth_an_injected_crash_is_caught(files, monkeypatch, command):
    """A plain Exception inside a subcommand (here the kernel loader they share) is a
    bug: the property sees it (exit 3 with "internal error")."""
    def crash(*args, **kwargs):
        raise Exception("injected")

    monkeypatch.setattr(cli_mlir, "load", crash)
    argv = [command, files["tiny.sync"]]
    status, out, err = run_cli(argv)
    with pytest.raises(AssertionError):
        check_outcome(argv, status, out, err)
