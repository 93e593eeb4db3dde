"""Progress on a terminal (docs/cli.md, "Progress"): a live display drawn with rich on
stderr, which leaves the screen clean (the command's output as it would be without it,
the cursor visible), and Ctrl-C typed on the terminal still ends the command (exit
130). Elsewhere, and with SYNCPROOF_PROGRESS=plain, the plain lines."""

from __future__ import annotations

import io
import re
import threading

import pytest

from tests.verify.cli.interrupt_support import ROOT
from tests.verify.cli.terminal_support import Screen, run_on_terminal
from verify.cli.interrupt import EXIT_INTERRUPTED, MESSAGE

TINY = str(ROOT / "tests" / "data" / "cli" / "tiny.sync")
PLAIN_PROGRESS = re.compile(r"^syncproof [a-z-]+: .*\(\d+\.\d+s\)$")
HIDE_CURSOR = "\x1b[?25l"


def unstyled(text: str) -> str:
    """`text` without colours and styles."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_the_live_display_appears_and_leaves_only_the_output_on_the_screen():
    run = run_on_terminal(["verify", "--scope", "bounded", TINY], env={"SYNCPROOF_TEST_SLOW": "sync:2"})
    assert run.status == 0, run.text
    assert HIDE_CURSOR in run.text, run.text
    assert "syncproof verify: syncing with strategy threshold" in unstyled(run.text), run.text
    screen = Screen.of(run.text)
    assert screen.cursor_visible
    assert not any(PLAIN_PROGRESS.match(line) or line.startswith("syncproof verify:") for line in screen.shown), \
        screen.shown
    assert screen.shown[0] == "syncproof: test hook: sync slowed", screen.shown
    assert screen.shown[1].startswith("sync: strategy threshold"), screen.shown
    assert screen.shown[-2].startswith("verdict: bisimilar"), screen.shown
    # Nothing is drawn after the output: the verdict's lines are the last bytes written.
    assert "\x1b" not in run.text[run.text.index("verdict:"):], run.text[-400:]


def test_the_proof_s_announcement_stays_above_the_display_and_the_rest_goes():
    """Through the whole of `verify` (sync, bounded check, proof on worker processes):
    the line shown whatever the throttle (the proof's budget) stays, as a plain line; no
    live line is left; the proof's verdict line is printed."""
    run = run_on_terminal(["verify", TINY], env={"SYNCPROOF_PROGRESS_INTERVAL": "0"})
    assert run.status == 0, run.text
    screen = Screen.of(run.text)
    assert screen.cursor_visible
    live = [line for line in screen.shown if line.startswith("syncproof verify:") and not PLAIN_PROGRESS.match(line)]
    assert live == [], screen.shown
    announced = [line for line in screen.shown if PLAIN_PROGRESS.match(line)]
    assert len(announced) == 1 and "all-values proof of bisimulation" in announced[0], screen.shown
    assert screen.shown[-2].startswith("all parameter values: proved"), screen.shown


def test_ctrl_c_on_the_terminal_ends_the_display_and_the_command():
    run = run_on_terminal(["verify", TINY], env={"SYNCPROOF_TEST_SLOW": "sync:120"},
                          ctrl_c_when=lambda text: HIDE_CURSOR in text and "syncing with strategy" in unstyled(text))
    assert run.status == EXIT_INTERRUPTED, run.text
    assert "Traceback" not in run.text and "KeyboardInterrupt" not in run.text, run.text
    screen = Screen.of(run.text)
    assert screen.cursor_visible
    assert screen.shown[-1].endswith(MESSAGE), screen.shown  # after the terminal's echo of ^C
    assert screen.shown == ["syncproof: test hook: sync slowed", screen.shown[-1]], screen.shown


def test_plain_lines_on_a_terminal_when_asked():
    run = run_on_terminal(["verify", "--scope", "bounded", TINY],
                          env={"SYNCPROOF_PROGRESS": "plain", "SYNCPROOF_PROGRESS_INTERVAL": "0"})
    assert run.status == 0, run.text
    assert HIDE_CURSOR not in run.text
    assert any(PLAIN_PROGRESS.match(line) for line in Screen.of(run.text).shown), run.text


def test_the_screen_model_catches_a_display_left_behind():
    """Teeth: output that leaves the live line and a hidden cursor behind fails the
    checks above."""
    drawn = f"{HIDE_CURSOR}\u280b 1.0s syncproof verify: syncing\r\nverdict: bisimilar\r\n"
    screen = Screen.of(drawn)
    assert not screen.cursor_visible
    assert any(line.startswith("\u280b") for line in screen.shown)
    cleaned = Screen.of(f"{HIDE_CURSOR}\u280b 1.0s syncproof verify: syncing\r\n\x1b[?25h\r\x1b[1A\x1b[2K"
                        "verdict: bisimilar\r\n")
    assert cleaned.cursor_visible and cleaned.shown == ["verdict: bisimilar"]


def test_a_silent_sync_phase_is_repeated_by_the_heartbeat():
    """A strategy that sends no message while it works (every strategy but threshold's
    planner) is still reported: the heartbeat repeats the phase once per interval."""
    from verify.cli.display import PlainProgress
    from verify.cli.limits import CommandLimit

    out = io.StringIO()
    progress = PlainProgress("sync", interval=0, stream=out)
    shown = threading.Event()
    original = progress.beat

    def beat(message):
        original(message)
        if out.getvalue().count("syncing with strategy barrier") >= 3:
            shown.set()

    progress.beat = beat
    with CommandLimit(None, progress.start, progress) as limit:
        limit.phase("syncing with strategy barrier")
        assert shown.wait(60), out.getvalue()  # a ceiling, never an assertion on time
    lines = out.getvalue().splitlines()
    assert all(PLAIN_PROGRESS.match(line) for line in lines), lines


def test_no_heartbeat_once_the_sync_is_over():
    """Teeth for the test above: the heartbeat speaks only while the command syncs."""
    from verify.cli.display import Heartbeat, PlainProgress

    out = io.StringIO()
    progress = PlainProgress("verify", interval=0, stream=out)
    checked = threading.Event()
    heartbeat = Heartbeat(progress, lambda: "syncing", lambda: checked.set() or False)
    heartbeat.start()
    assert checked.wait(60)
    heartbeat.stop()
    assert out.getvalue() == ""
