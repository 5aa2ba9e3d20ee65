"""Starting `warmroute engine` / `warmroute serve` from a benchmark script: run the command and
read its stdout until it has announced where it listens.

Usage:
  from announce import start
  engine, hosts = start([bin, "engine", "--replicas", "2", "--port", "0"],
                        r"replica \\d+ listening on (\\S+)", 2)
"""
import re
import subprocess


def start(args, pattern, count, stderr=None):
    """(process, [the first group of each of the first `count` stdout lines matching `pattern`]).
    RuntimeError when the process ends first."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True)
    found = []
    while len(found) < count:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{args[1]} did not start")
        m = re.search(pattern, line)
        if m:
            found.append(m.group(1))
    return proc, found
