"""Ctrl-C in every phase (docs/cli.md, "Ctrl-C"): exit 130, one line on stderr after the
signal and no traceback, and no process of the command left alive. Each test starts the
command as a user would, waits until its progress output shows it reached the phase,
and sends SIGINT to its process group, as a terminal does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.verify.cli.interrupt_support import ROOT, run_and_interrupt

from verify.cli.interrupt import EXIT_INTERRUPTED, MESSAGE

TINY = str(ROOT / "tests" / "data" / "cli" / "tiny.sync")
DOUBLE_BUFFER = str(ROOT / "docs" / "examples" / "double_buffer.sync")
PROGRESS = re.compile(r"^syncproof [a-z-]+: .*\(\d+\.\d+s\)$")


def assert_interrupted_cleanly(run) -> None:
    assert run.status == EXIT_INTERRUPTED, run
    assert not any("Traceback" in line or "KeyboardInterrupt" in line for line in run.before + run.after), run
    assert run.after and run.after[-1] == MESSAGE, run
    # Lines printed between reaching the phase and the signal are progress lines; after
    # the signal only the one line comes.
    assert [line for line in run.after if not PROGRESS.match(line)] == [MESSAGE], run
    assert run.left_alive == (), run


def _sync_stage(line: str) -> bool:
    return line.startswith("syncproof verify: syncing: threshold stage") or line.startswith("syncproof: test hook")


def test_ctrl_c_during_the_sync_ends_the_command():
    run = run_and_interrupt(["sync", TINY], lambda line: line.startswith("syncproof: test hook: sync"),
                            env={"SYNCPROOF_TEST_SLOW": "sync:120"})
    assert_interrupted_cleanly(run)


def test_ctrl_c_during_verify_s_sync_ends_the_command():
    run = run_and_interrupt(["verify", TINY], _sync_stage, env={"SYNCPROOF_TEST_SLOW": "sync:120"})
    assert_interrupted_cleanly(run)


def test_ctrl_c_during_the_bounded_check_ends_the_command():
    run = run_and_interrupt(["verify", "--scope", "bounded", "--max-param", "100000", DOUBLE_BUFFER],
                            lambda line: line.startswith("syncproof verify: valuation 3/"))
    assert_interrupted_cleanly(run)


def test_ctrl_c_during_the_bounded_check_on_worker_processes_ends_them():
    run = run_and_interrupt(["verify", "--scope", "bounded", "--workers", "2", "--max-param", "100000",
                             DOUBLE_BUFFER], lambda line: line.startswith("syncproof verify: syncing"), children=2)
    assert_interrupted_cleanly(run)


def test_ctrl_c_during_the_proof_ends_its_worker_processes():
    run = run_and_interrupt(["verify", "--proof-jobs", "2", TINY],
                            lambda line: line.startswith("syncproof verify: all-values proof"),
                            env={"SYNCPROOF_TEST_SLOW": "proof-worker:120"}, children=2)
    assert_interrupted_cleanly(run)


def test_ctrl_c_during_a_search_ends_the_command():
    run = run_and_interrupt(["search", "--examples", "100000", "--seed", "3"],
                            lambda line: line.startswith("syncproof search: ") and "kernels tried" in line)
    assert_interrupted_cleanly(run)


def test_ctrl_c_during_a_dask_fan_out_ends_the_command():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, host="127.0.0.1",
                                  protocol="tcp", dashboard_address=None) as cluster:
        run = run_and_interrupt(["verify", "--scope", "bounded", "--cluster", cluster.scheduler_address,
                                 "--max-param", "100000", DOUBLE_BUFFER],
                                lambda line: line.startswith("syncproof verify: valuation"))
    assert_interrupted_cleanly(run)
    assert any("connecting to the Dask scheduler" in line for line in run.before), run


def test_the_check_catches_a_traceback_and_a_survivor():
    """Teeth: what `assert_interrupted_cleanly` rejects."""
    from tests.verify.cli.interrupt_support import Interrupted

    good = Interrupted(EXIT_INTERRUPTED, ("syncproof verify: x (1.0s)",), (MESSAGE,), ())
    assert_interrupted_cleanly(good)
    for bad in (Interrupted(1, good.before, good.after, ()),
                Interrupted(EXIT_INTERRUPTED, good.before, ("Traceback (most recent call last):", MESSAGE), ()),
                Interrupted(EXIT_INTERRUPTED, good.before, (MESSAGE, "Exception ignored in: ..."), ()),
                Interrupted(EXIT_INTERRUPTED, good.before, (MESSAGE,), (12345,))):
        with pytest.raises(AssertionError):
            assert_interrupted_cleanly(bad)


def test_a_python_handler_alone_does_not_survive_ctrl_c_in_a_busy_thread(tmp_path: Path):
    """Teeth for the design: the command as it was (the main thread joins the command's
    thread; Python's own SIGINT handling) prints a KeyboardInterrupt traceback. Run
    through the same harness, it fails the check above."""
    script = tmp_path / "old_main.py"
    script.write_text(
        "import sys, threading, time\n"
        "def run():\n"
        "    print('syncproof verify: valuation 3/9 (1.0s)', file=sys.stderr, flush=True)\n"
        "    time.sleep(60)\n"
        "t = threading.Thread(target=run, daemon=True); t.start(); t.join()\n")
    import os
    import signal
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    assert process.stderr.readline().startswith("syncproof verify")
    os.killpg(process.pid, signal.SIGINT)
    try:
        err = process.stderr.read()
        process.wait(30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert "KeyboardInterrupt" in err  # ... which assert_interrupted_cleanly rejects
    with pytest.raises(AssertionError):
        from tests.verify.cli.interrupt_support import Interrupted

        assert_interrupted_cleanly(Interrupted(process.returncode or 0, (), tuple(err.splitlines()), ()))


def test_starting_a_process_pool_leaves_sigint_blocked_in_the_starting_thread():
    """multiprocessing's resource tracker unblocks SIGINT in the thread that starts it; the
    command's thread would then take a Ctrl-C and drop it (the main thread never hearing
    of it). With the command's guard in place the thread's mask is restored; without it
    (the teeth) SIGINT ends up unblocked."""
    import subprocess
    import sys

    script = ("import signal, sys\n"
              "from multiprocessing import resource_tracker\n"
              "from verify.cli.interrupt import keep_signal_masks_of_resource_tracker_starts\n"
              "if sys.argv[1] == 'guarded':\n"
              "    keep_signal_masks_of_resource_tracker_starts()\n"
              "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
              "resource_tracker.ensure_running()\n"
              "print(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, ()))\n")
    answers = {how: subprocess.run([sys.executable, "-c", script, how], cwd=ROOT, capture_output=True, text=True,
                                   timeout=120).stdout.strip() for how in ("guarded", "bare")}
    assert answers == {"guarded": "True", "bare": "False"}, answers
