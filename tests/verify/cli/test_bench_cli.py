"""`syncproof bench` from the command line: tables, --json, --out pictures."""

import json
from pathlib import Path

from verify.cli.main import main
from verify.timing.plots import bar_chart

DATA = Path(__file__).parents[2] / "data" / "cli"
TINY_SYNC, TINY_MLIR = str(DATA / "tiny.sync"), str(DATA / "tiny.mlir")
PNG = b"\x89PNG\r\n\x1a\n"


def test_bench_out_with_mixed_sync_and_mlir_kernels_writes_every_picture(tmp_path, capsys):
    """Regression: kernels whose strategy columns differ (.mlir adds snax-barrier) ended
    in StopIteration in plots.bar_chart, with no table and no picture."""
    out = tmp_path / "pics" / "deeper"
    assert main(["bench", "--out", str(out), TINY_MLIR, TINY_SYNC]) == 0
    stdout = capsys.readouterr().out
    # both kernels have the stem `tiny`: they are told apart by file name
    pictures = [out / "bench.png", out / "tiny.mlir_timeline.png", out / "tiny.sync_timeline.png"]
    for picture in pictures:
        assert picture.read_bytes().startswith(PNG), picture
        assert str(picture) in stdout
    assert "pictures: " in stdout
    assert "tiny.sync" in stdout and "tiny.mlir" in stdout  # both tables printed


def test_bench_json_stays_parseable_with_out(tmp_path, capsys):
    assert main(["bench", "--json", "--out", str(tmp_path), TINY_SYNC]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert {r["strategy"] for r in rows} >= {"oracle", "threshold", "barrier"}
    assert all(r["kernel"] == "tiny" and r["cycles"] > 0 for r in rows)
    assert f"pictures: {tmp_path / 'bench.png'}" in captured.err


def test_bench_out_naming_a_file_is_a_usage_error(tmp_path, capsys):
    """Regression: --out EXISTING_FILE ended in FileExistsError."""
    existing = tmp_path / "x"
    existing.write_text("")
    assert main(["bench", "--out", str(existing), TINY_SYNC]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a folder" in err and "Traceback" not in err


def test_bar_chart_draws_kernels_with_different_strategies(tmp_path):
    rows = [
        {"kernel": "a", "strategy": "barrier", "vs_barrier": 1.0},
        {"kernel": "a", "strategy": "threshold", "vs_barrier": 2.0},
        {"kernel": "a", "strategy": "snax-barrier", "vs_barrier": 0.5},
        {"kernel": "b", "strategy": "barrier", "vs_barrier": 1.0},
        {"kernel": "b", "strategy": "threshold", "vs_barrier": 1.5},
        {"kernel": "b", "strategy": "flags", "vs_barrier": 1.2},
    ]
    bar_chart(rows, tmp_path / "b.png", "trainium")
    assert (tmp_path / "b.png").read_bytes().startswith(PNG)


def test_bench_of_a_kernel_without_ops_prints_undefined_ratios(tmp_path, capsys):
    """Regression (found by the CLI fuzz): a kernel with no ops runs 0 cycles under every
    strategy, so its ratios are undefined; bench printed them with a float format and
    ended in an internal error. They print as '-' (and null in --json)."""
    kernel = tmp_path / "no_ops.sync"
    kernel.write_text("engines LD\nbarrier\nbarrier\n")
    assert main(["bench", str(kernel)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("no_ops"))
    assert row.split()[1:6] == ["0", "0", "0", "-", "-"]
    assert main(["bench", "--json", str(kernel)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(r["cycles"] == 0 for r in rows)
    assert {r["vs_oracle"] for r in rows if "vs_oracle" in r} == {None}
