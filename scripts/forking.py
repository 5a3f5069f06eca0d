"""A bridge toolgauge starts once for a run (`"forks": true`).

toolgauge starts such a server with a listening Unix socket as its stdin.
`main` then has `warm` load what every trial needs (a package, a
domain), once, and forks a child for each connection: the child reads the
connection's first line, a JSON list of arguments more (a trial's
`trial_args`), and runs `run` on the arguments with the connection as its
stdin and stdout, so that it serves MCP as a bridge started afresh with
those arguments would. Each child is a copy of the loaded process: what
one trial changes, no other sees. Started any other way, `main` just
runs `run`.

    import forking
    forking.main(sys.argv[1:], run=..., warm=...)
"""

import ctypes
import json
import os
import signal
import socket
import sys
import traceback


def main(argv, run, warm):
    listener = listening_stdin()
    if listener is None:
        run(argv)
        return
    warm(argv)
    # Children reaped as they end, their CPU time counted as this
    # process's children's.
    signal.signal(signal.SIGCHLD, reap)
    while True:
        connection, _ = listener.accept()
        if os.fork() == 0:
            listener.detach()
            serve_child(connection, run, argv)
        connection.close()


def listening_stdin():
    """The listening socket toolgauge gave as stdin, if it gave one."""
    try:
        listener = socket.socket(fileno=0)
    except OSError:
        return None
    if listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        return listener
    listener.detach()
    return None


def reap(_signal, _frame):
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def serve_child(connection, run, argv):
    """In the forked child: the connection as stdin and stdout, its first
    line the trial's arguments, then `run`. Never returns."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        # Ended with the loaded process, whoever ends it.
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    status = 0
    try:
        os.dup2(connection.fileno(), 0)
        os.dup2(connection.fileno(), 1)
        connection.close()
        # Read and written anew: the old ones took fd 1 for a file.
        sys.stdin = os.fdopen(0, "r", closefd=False)
        sys.stdout = os.fdopen(1, "w", closefd=False)
        line = b""
        while not line.endswith(b"\n"):
            byte = os.read(0, 1)
            if not byte:
                os._exit(0)
            line += byte
        run(argv + json.loads(line))
    except SystemExit as end:
        status = end.code if isinstance(end.code, int) else 1
        if isinstance(end.code, str):
            print(end.code, file=sys.stderr)
    except BaseException:  # the child's own end, reported
        traceback.print_exc()
        status = 1
    sys.stderr.flush()
    os._exit(status)
