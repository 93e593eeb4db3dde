"""Running `python -m verify.cli` as a user's terminal would, and pressing Ctrl-C: the
command runs in a session of its own (its own process group), its stderr is read line
by line, and SIGINT goes to the whole group, as a terminal sends it."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import attrs
import psutil

ROOT = Path(__file__).parents[3]
WAIT_FOR_PHASE = 120  # seconds: a generous ceiling on a loaded machine, never an assertion
WAIT_FOR_EXIT = 60


@attrs.frozen
class Interrupted:
    status: int
    before: tuple[str, ...]  # stderr lines read before the signal
    after: tuple[str, ...]  # stderr lines read after it
    left_alive: tuple[int, ...]  # processes of the command's group or tree still alive after it ended


def run_and_interrupt(args: list[str], reached, env: dict | None = None, children: int = 0,
                      cwd: Path = ROOT) -> Interrupted:
    """Start `syncproof ARGS`; once a stderr line satisfies `reached(line)` and the
    command has at least `children` descendant processes, send SIGINT to its process
    group; return what it printed and which of its processes outlived it."""
    environ = {**os.environ, "SYNCPROOF_PROGRESS_INTERVAL": "0", **(env or {})}
    process = subprocess.Popen([sys.executable, "-m", "verify.cli", *args], cwd=cwd, env=environ,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in process.stderr] + [lines.put(None)],
                              daemon=True)
    reader.start()
    before: list[str] = []
    seen: dict[int, psutil.Process] = {}
    try:
        _wait_for(process, lines, before, reached)
        tree = psutil.Process(process.pid)
        for _ in range(int(WAIT_FOR_PHASE / 0.1)):  # polls, not a clock: no time is asserted on
            if len(tree.children(recursive=True)) >= children:
                break
            time.sleep(0.1)
        for child in tree.children(recursive=True):
            seen[child.pid] = child
        assert len(seen) >= children, f"expected {children} child processes, found {len(seen)}"
        os.killpg(process.pid, signal.SIGINT)
        status = process.wait(WAIT_FOR_EXIT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    reader.join(WAIT_FOR_EXIT)
    after = []
    while not lines.empty():
        line = lines.get()
        if line is not None:
            after.append(line)
    return Interrupted(status, tuple(before), tuple(after), _alive(process.pid, seen))


def _wait_for(process, lines: queue.Queue, before: list[str], reached) -> None:
    quiet = 0  # polls that found no line, each of at most 0.5 s (counted: no clock is read)
    while quiet < WAIT_FOR_PHASE / 0.5:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            quiet += 1
            continue
        if line is None:
            raise AssertionError(f"the command ended (status {process.wait()}) before the phase:\n" + "\n".join(before))
        before.append(line)
        if reached(line):
            return
    raise AssertionError("the phase was not reached in time:\n" + "\n".join(before))


def _alive(group: int, seen: dict[int, psutil.Process]) -> tuple[int, ...]:
    """Processes of the command's tree (seen before the signal) or of its process group
    that are still running (zombies count as gone: their parent has not reaped them yet),
    once they have had a moment to go: a proof worker's job child dies of its parent's
    death signal, which the kernel delivers after the parent exits. Polled, up to 30 s
    (a loaded 2-core machine may take seconds to schedule a dying process): a process
    left behind (the tests keep theirs busy for minutes) is still there."""
    for _ in range(300):
        time.sleep(0.1)
        alive = _still_running(group, seen)
        if not alive:
            return ()
    return alive


def _still_running(group: int, seen: dict[int, psutil.Process]) -> tuple[int, ...]:
    alive = set()
    for pid, proc in seen.items():
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.Error:
            pass
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == group and proc.info["status"] != psutil.STATUS_ZOMBIE:
                alive.add(proc.pid)
        except (OSError, psutil.Error):
            pass
    return tuple(sorted(alive))


def progress_line(command: str):
    """`reached` for the first progress line of `command` that contains `text`."""
    def at(text: str):
        return lambda line: line.startswith(f"syncproof {command}: ") and text in line
    return at
