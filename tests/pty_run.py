#!/usr/bin/env python3
"""Runs a command with its stdout and stderr on a pseudo-terminal (or, with --no-tty, on a pipe)
and saves everything it wrote, for the progress-bar tests (tests/run_progress.sh).

With --until REGEX the command (its whole process group, forked children included) is stopped
with SIGTERM as soon as its output matches; --timeout S stops it after S seconds in any case.
Exit status: the command's own when it ended by itself, 0 when it was stopped after a match,
124 when it was stopped by the timeout.

usage: pty_run.py [--no-tty] [--until REGEX] [--timeout S] OUTFILE -- COMMAND [ARG...]
"""
import os
import re
import select
import signal
import subprocess
import sys
import time


def main():
    args = sys.argv[1:]
    tty, until, timeout = True, None, 60.0
    while args and args[0].startswith("--") and args[0] != "--":
        opt = args.pop(0)
        if opt == "--no-tty":
            tty = False
        elif opt == "--until":
            until = re.compile(args.pop(0).encode())
        elif opt == "--timeout":
            timeout = float(args.pop(0))
        else:
            print(__doc__)
            return 2
    if len(args) < 3 or args[1] != "--":
        print(__doc__)
        return 2
    outfile, cmd = args[0], args[2:]
    if tty:
        import pty
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execvp(cmd[0], cmd)
            finally:
                os._exit(127)
        proc = None
    else:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        pid, fd = proc.pid, proc.stdout.fileno()
    data = bytearray()
    start = time.monotonic()
    stopped = None
    while True:
        left = timeout - (time.monotonic() - start)
        if left <= 0:
            stopped = "timeout"
            break
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's other side is closed
                chunk = b""
            if not chunk:
                break
            data += chunk
            if until is not None and until.search(data):
                stopped = "match"
                break
    if stopped:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(pid, 0)
    if proc is not None:
        proc.returncode = 0  # reaped above
    with open(outfile, "wb") as f:
        f.write(bytes(data))
    if stopped == "match":
        return 0
    if stopped == "timeout":
        return 124
    return os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else (
        os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    sys.exit(main())
