"""How long a trial of the forking bridge takes to start, and its CPU.

    start_time.py PYTHON DOMAIN N

Starts bridge.py with PYTHON as toolgauge does (a listening Unix socket as
its stdin) and connects N times one after another, each a trial of the
domain's tasks in turn, timing each connection from connect to the answer
to MCP's initialize. The CPU of a start is that of N starts less that of
one, over N - 1: the bridge's, its children's and this script's.
"""

import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "start_time", "version": "1"},
    },
}


def starts(python, domain, count):
    """Wall seconds of each start, and the CPU seconds of them all."""
    before = cpu()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "socket")
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(path)
        listener.listen(16)
        bridge = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bridge.py")
        server = subprocess.Popen(
            [python, bridge, "--domain", domain],
            stdin=listener.fileno(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        listener.close()
        walls = []
        for i in range(count):
            began = time.perf_counter()
            connection = socket.socket(socket.AF_UNIX)
            connection.connect(path)
            trial = json.dumps(["--task", task_id(python, domain, i)]) + "\n"
            connection.sendall((trial + json.dumps(INITIALIZE) + "\n").encode())
            if not connection.makefile("rb").readline():
                sys.exit(f"start_time.py: the bridge closed trial {i} unanswered")
            walls.append(time.perf_counter() - began)
            connection.close()
        server.terminate()
        server.wait()
    return walls, cpu() - before


def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


TASKS = {}


def task_id(python, domain, i):
    if domain not in TASKS:
        exported = subprocess.run(
            [python, os.path.join(os.path.dirname(__file__), "bridge.py"), "--domain", domain, "--export"],
            capture_output=True,
            check=True,
            text=True,
        ).stdout
        TASKS[domain] = [json.loads(line)["id"] for line in exported.splitlines()]
    ids = TASKS[domain]
    return ids[i % len(ids)]


def main():
    python, domain, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    task_id(python, domain, 0)
    walls, cpu_all = starts(python, domain, count)
    first, cpu_one = starts(python, domain, 1)
    rest = [w * 1000 for w in walls[1:]]
    print(f"{domain}: first start {walls[0]:.2f} s (tau2 loaded); then {len(rest)} starts:")
    print(f"  wall ms: median {statistics.median(rest):.1f}, max {max(rest):.1f}")
    print(f"  CPU ms per start: {(cpu_all - cpu_one) / (count - 1) * 1000:.1f}")


if __name__ == "__main__":
    main()
