"""Running `python -m verify.cli` on a pseudo terminal, as a user's terminal would: the
terminal is the command's controlling terminal (so a Ctrl-C typed on it, byte 0x03,
sends SIGINT to the command's process group), and what the command drew is replayed on
a small screen model to see what the user is left looking at."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import threading
import time

import attrs

from tests.verify.cli.interrupt_support import ROOT, WAIT_FOR_EXIT, WAIT_FOR_PHASE

COLUMNS, ROWS = 100, 40


@attrs.frozen
class TerminalRun:
    status: int
    raw: bytes  # everything the command wrote to the terminal (stdout and stderr)

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")


def run_on_terminal(args: list[str], env: dict | None = None, ctrl_c_when=None) -> TerminalRun:
    """Run `syncproof ARGS` with stdin, stdout and stderr on a new pseudo terminal; once
    `ctrl_c_when(text so far)` holds, type Ctrl-C on it."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    environ = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), **(env or {})}
    if "SYNCPROOF_PROGRESS" not in (env or {}):
        environ.pop("SYNCPROOF_PROGRESS", None)
    process = subprocess.Popen([sys.executable, "-m", "verify.cli", *args], cwd=ROOT, env=environ,
                               stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                               preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    received = bytearray()
    lock = threading.Lock()

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the command closed the terminal
                return
            if not chunk:
                return
            with lock:
                received.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if ctrl_c_when is not None:
            for _ in range(int(WAIT_FOR_PHASE / 0.1)):  # polls, not a clock: no time is asserted on
                with lock:
                    seen = bytes(received).decode("utf-8", "replace")
                if ctrl_c_when(seen) or process.poll() is not None:
                    break
                time.sleep(0.1)
            assert process.poll() is None, f"the command ended before Ctrl-C:\n{seen}"
            os.write(master, b"\x03")
        status = process.wait(WAIT_FOR_EXIT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()
        reader.join(WAIT_FOR_EXIT)
        os.close(master)
    return TerminalRun(status, bytes(received))


_CONTROL = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


@attrs.define
class Screen:
    """What a terminal shows after the output is played on it: its lines and whether the
    cursor is visible. Knows the sequences a one-line live display uses; any other one
    is an error (so a test sees a display that draws what it cannot account for)."""

    lines: list[str] = attrs.Factory(lambda: [""])
    row: int = 0
    col: int = 0
    cursor_visible: bool = True

    @classmethod
    def of(cls, text: str) -> "Screen":
        screen = cls()
        at = 0
        while at < len(text):
            match = _CONTROL.match(text, at)
            if match:
                screen._control(match.group(1), match.group(2))
                at = match.end()
                continue
            screen._put(text[at])
            at += 1
        return screen

    def _control(self, params: str, final: str) -> None:
        if final == "m":
            return  # colours and styles
        if params == "?25" and final in "lh":
            self.cursor_visible = final == "h"
        elif final == "A":
            self.row = max(0, self.row - int(params or 1))
        elif final == "K" and params in ("2", ""):
            line = self.lines[self.row]
            self.lines[self.row] = "" if params == "2" else line[:self.col]
        else:
            raise AssertionError(f"an unexpected control sequence: ESC[{params}{final}")

    def _put(self, char: str) -> None:
        if char == "\r":
            self.col = 0
        elif char == "\n":
            self.row += 1
            while len(self.lines) <= self.row:
                self.lines.append("")
        elif char == "\x1b":
            raise AssertionError("an unexpected escape")
        else:
            line = self.lines[self.row].ljust(self.col)
            self.lines[self.row] = line[:self.col] + char + line[self.col + 1:]
            self.col += 1

    @property
    def shown(self) -> list[str]:
        """The non-empty lines, trailing blanks removed."""
        return [line.rstrip() for line in self.lines if line.strip()]
