"""Unsupported NKI constructs are refused with `FILE:LINE:COL: error: unsupported NKI
construct 'X'` and exit 2, never a guess; and the importer, fed small generated NKI
sources (loop nests, slices, calls, some of them unsupported), raises nothing but a
KernelError (with a teeth test: a reader broken to crash is caught)."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from semantics.errors import KernelError
from semantics.nki import import_source
from verify.cli.main import main

HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n\n\n@nki.jit\ndef k(a):\n"

# (body lines, the construct named in the message, the text the error points at)
CASES = [
    (["for i in nl.affine_range(4):", "    while True:", "        pass"], "while", "while True"),
    (["t = nl.load(a[0:128, 0:128])", "if t:", "    nl.store(a, value=t)"],
     "control flow that depends on data", "t:"),
    (["for i in [0, 1]:", "    pass"], "a for loop over anything but", "[0, 1]"),
    (["t = nl.load(a[0:128:2, 0:128])"], "a strided slice", "0:128:2"),
    (["t = nl.foo(a)"], "nl.foo", "nl.foo(a)"),
    (["t = nl.load(a[0:128, 0:128])", "u = nisa.unknown_op(t)"], "nisa.unknown_op", "nisa.unknown_op(t)"),
    (["for i in nl.affine_range(4):", "    break"], "break", "break"),
    (["t = nl.load(a[0:128, 0:128])", "for i in nl.affine_range(t):", "    pass"],
     "loop bounds that are not integers", "nl.affine_range(t)"),
    (["for i in nl.affine_range(2):", "    t = nl.load(a[i, 0:128])", "nl.store(a, value=t)"],
     "allocated in a loop and used outside it", "nl.store(a, value=t)"),
    (["t = nl.load(a[0:128, 0:128])", "u = t if t else t"], "control flow that depends on data", "t else"),
    (["x = nl.load(a[0:128, 0:128])", "for i in nl.affine_range(a.shape[0]):",
      "    if i > 1:", "        y = nl.exp(x)", "    nl.store(a, value=y)"], "bound differently", "y)"),
    (["acc = nl.load(a[0:128, 0:128])", "for i in nl.affine_range(4):", "    acc = nl.add(acc, 1.0)",
      "nl.store(a[0:128, 0:128], value=acc)"], "'acc' carried from one loop iteration", "for i in"),
    (["n = 0", "for i in nl.affine_range(4):", "    t = nl.load(a[n, 0:128])", "    n = n + 1"],
     "'n' carried from one loop iteration", "for i in"),
    (["t = nl.load(a[0:128, 0:128])", "u = nl.add((t, t), 1.0)"], "tiles inside a container", "nl.add("),
]


def _where(body: list[str], needle: str) -> tuple[int, int]:
    """Line and column of `needle` in the kernel source, found by text (the last line
    containing it), independently of the importer."""
    lines = (HEAD + "\n".join("    " + line for line in body) + "\n").splitlines()
    for n in range(len(lines) - 1, -1, -1):
        if needle in lines[n]:
            return n + 1, lines[n].index(needle) + 1
    raise AssertionError(needle)


@pytest.mark.parametrize("body,construct,needle", CASES, ids=[c[1][:30] for c in CASES])
def test_unsupported_construct_is_exit_2_with_its_position(tmp_path, capsys, body, construct, needle):
    path = tmp_path / "kernel.py"
    path.write_text(HEAD + "\n".join("    " + line for line in body) + "\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    line, col = _where(body, needle)
    assert err.startswith(f"{path}:{line}:{col}: error: unsupported NKI construct '")
    assert construct in err
    assert "Traceback" not in err


def test_python_syntax_error_and_missing_file_are_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text(HEAD + "    x = (\n")
    assert main(["import-nki", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"{bad}:")
    assert main(["import-nki", str(tmp_path / "missing.py")]) == 2
    assert main(["import-nki", str(tmp_path / "x.sync")]) == 2


# ---------------------------------------------------------------------- fuzzing

_ITERS = ["nl.affine_range({n})", "nl.sequential_range({n})", "nl.static_range({n})", "range({n})",
          "range(1, {n}, 2)", "nl.affine_range({n}, 0)"]
_BOUNDS = ["2", "a.shape[0] // 128", "a.shape[1]", "K // 64", "t", "-1", "0"]
_INDEX = ["{v} * 128:({v} + 1) * 128", "nl.ds({v} * 64, 64)", "{v}", "0:128", ":", "...", "{v} * 128 + ip",
          "-1", "{v}:{v} - 1", "::2", "nl.arange(8)", "nl.ds(t, 64)", "nl.arange(t)"]
_CALLS = ["nl.exp({x})", "nisa.activation(op=nl.exp, data={x})", "nisa.tensor_tensor({x}, {x}, op=nl.add)",
          "nl.matmul({x}, {x}, transpose_x=True)", "{x} * 2.0", "-{x}", "nl.bogus({x})", "{x} + {x}",
          "nisa.nc_matmul({x}, {x})", "nl.copy({x}, dtype=nl.float32)", "{x}[0:64, :]", "{x}.shape[0]"]


@st.composite
def sources(draw) -> str:
    """A small NKI kernel: a nest of up to three loops whose body loads windows of `a`,
    computes, and stores; indices, bounds and calls drawn from lists that mix supported
    and unsupported forms."""
    lines = ["K, N = a.shape", "ip = nl.arange(128)[:, None]", "t = nl.load(a[0:128, 0:128])"]
    depth = draw(st.integers(0, 3))
    names = []
    for d in range(depth):
        var = draw(st.sampled_from(["i", "j", "k"]))
        bound = draw(st.sampled_from(_BOUNDS))
        lines.append("    " * d + f"for {var} in " + draw(st.sampled_from(_ITERS)).format(n=bound) + ":")
        names.append(var)
    pad = "    " * depth
    v = names[-1] if names else "0"
    for n in range(draw(st.integers(1, 3))):
        index = ", ".join(draw(st.sampled_from(_INDEX)).format(v=v) for _ in range(draw(st.integers(1, 3))))
        lines.append(f"{pad}x{n} = nl.load(a[{index}])")
        lines.append(f"{pad}y{n} = " + draw(st.sampled_from(_CALLS)).format(x=f"x{n}"))
        if draw(st.booleans()):
            lines.append(f"{pad}if {v} > {n}:")
            lines.append(f"{pad}    y{n} = nl.exp(y{n})")
        lines.append(f"{pad}nl.store(a[{index}], value=y{n})")
    return HEAD + textwrap.indent("\n".join(lines), "    ") + "\n"


def outcome(source: str) -> str:
    """`imported`, `refused` (a KernelError), or `crash: TYPE`."""
    try:
        import_source(source, "fuzz.py")
    except KernelError:
        return "refused"
    except Exception as exc:  # noqa: BLE001 - what the property is about
        return f"crash: {type(exc).__name__}: {exc}"
    return "imported"


@settings(max_examples=150)
@given(sources())
def test_importer_raises_only_kernel_errors_on_generated_sources(source):
    assert not outcome(source).startswith("crash"), source


def test_generated_sources_are_both_imported_and_refused():
    seen = {outcome(find(sources(), lambda s, want=want: outcome(s) == want)) for want in ("imported", "refused")}
    assert seen == {"imported", "refused"}


def test_teeth_a_reader_that_crashes_on_windows_is_caught(monkeypatch):
    from semantics.nki import tensors

    def broken_window(self, base, index, node):
        return index[3]  # an IndexError on the usual two-dimensional windows

    monkeypatch.setattr(tensors.TensorMixin, "window", broken_window)
    found = find(sources(), lambda s: outcome(s).startswith("crash"))
    assert "IndexError" in outcome(found)
