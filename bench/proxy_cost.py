#!/usr/bin/python3
"""Per-request cost of each proxy in bench/proxy_overhead.py's setup: CPU time (user and system,
from /proc/PID/stat before and after a wrk run) and, with --syscalls, system calls per request
(strace -c -f on the proxy during a wrk run at 8 connections; slow under strace, counts only)
and, with --perf PREFIX, a `perf record -g` profile of the proxy during each wrk run, and with
--mallocs, calls to glibc's malloc per request (a `perf probe` uprobe on libc's malloc counted by
`perf stat` during a wrk run at 8 connections; slow while counting, counts only; needs root;
--libc-calls FUNCTION counts another libc function's calls the same way), and
with --instructions, user-space instructions per request: the proxy runs under valgrind's
callgrind (haproxy and warmroute only: nginx forks its workers), and after a warm-up its counters
are zeroed, wrk runs at 8 connections, and the counters are dumped. Unlike CPU time, this count
does not depend on what else the machine is doing, so it shows changes of a few percent that
timing runs on this machine cannot (the kernel's share is not in it).

With --syscall-counts, system calls and context switches per request counted in the kernel
(`perf stat` on the syscalls:sys_enter_* tracepoints of the proxy's threads) during the timed wrk
run itself, at 64 connections and full speed: unlike strace, this does not slow the proxy down or
change how its calls batch (needs root).

For the warmroute proxies, also how often per request a worker found the routing lock held, and
how long such waits took per request on average (its /metrics counters
warmroute_routing_lock_waits_total and _wait_seconds_total, read before and after the wrk run).

With --peers, also the CPU time per request of the nginx backend (its processes, from
/proc/PID/stat) and of wrk (this script's children, getrusage) during the same wrk run: on two
cores, what the proxy makes its peers spend counts against throughput too.

A proxy given as round_robin@PATH or warmroute@PATH runs the warmroute binary at PATH instead of
--bin's: with --rounds N (the whole list N times, interleaved), an A/B of two builds.

With --threads N every proxy runs N worker threads (nginx: N worker processes) instead of
proxy_overhead.py's 2; with N = 1 a warmroute gateway's routing lock is never contended.

With --tls DIR (server.pem and server.key in DIR, e.g. from deploy/tls/make-certs.sh) the
warmroute proxies terminate TLS (listen.tls) and wrk speaks HTTPS to them; HAProxy and nginx are
then skipped. Each wrk connection is kept alive, so this is the cost of TLS records, not of
handshakes.

Usage: /usr/bin/python3 bench/proxy_cost.py [--bin build/release/src/cli/warmroute]
       [--syscalls] [--syscall-counts] [--mallocs] [--libc-calls FUNCTION] [--instructions] [--perf PREFIX] [--perf-hz HZ] [--peers] [--tls DIR] [--threads N]
       [--rounds N] [haproxy nginx round_robin warmroute warmroute@OTHER_BINARY ...]
Needs wrk, haproxy, nginx (and strace for --syscalls, valgrind for --instructions).
"""
import argparse
import importlib.util
import os
import re
import resource
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("po", os.path.join(HERE, "proxy_overhead.py"))
po = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(po)


def lock_waits(port, scheme):
    """(waits, wait seconds) of a warmroute proxy's routing lock so far, from its /metrics; None
    for a build before the counters (an A/B with warmroute@OLD_BINARY)."""
    context = ssl._create_unverified_context() if scheme == "https" else None
    with urllib.request.urlopen(f"{scheme}://127.0.0.1:{port}/metrics", timeout=10,
                                context=context) as resp:
        text = resp.read().decode()
    values = {}
    for name in ("warmroute_routing_lock_waits_total", "warmroute_routing_lock_wait_seconds_total"):
        m = re.search(rf"(?m)^{name} (\S+)$", text)
        if not m:
            return None
        values[name] = float(m.group(1))
    return (values["warmroute_routing_lock_waits_total"],
            values["warmroute_routing_lock_wait_seconds_total"])


def cpu_us(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    tick = 1e6 / os.sysconf("SC_CLK_TCK")
    return int(fields[11]) * tick, int(fields[12]) * tick


def start_proxy(which, port, backends, tmp, binary, tls_dir=None, wrapper=(), threads=2):
    if which == "haproxy":
        with open(f"{tmp}/h.cfg", "w") as f:
            f.write(po.haproxy_conf(port, backends, threads))
        return subprocess.Popen([*wrapper, shutil.which("haproxy") or "/usr/sbin/haproxy", "-f",
                                 f"{tmp}/h.cfg"])
    if which == "nginx":
        with open(f"{tmp}/p.conf", "w") as f:
            f.write(po.nginx_proxy_conf(tmp, port, backends, threads))
        return subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c",
                                 f"{tmp}/p.conf", "-p", tmp])
    conf = po.warmroute_conf(port, backends, which, threads)
    if tls_dir:
        conf = conf.replace(f"  threads: {threads}\n",
                            f"  threads: {threads}\n  tls:\n    cert_file: {tls_dir}/server.pem\n"
                            f"    key_file: {tls_dir}/server.key\n")
    with open(f"{tmp}/w.yaml", "w") as f:
        f.write(conf)
    return subprocess.Popen([*wrapper, binary, "serve", "--config", f"{tmp}/w.yaml", "--log-level",
                             "warn"], stdout=subprocess.DEVNULL)


def wrk(port, script, connections, threads, seconds, scheme="http"):
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "-s", script,
                          f"{scheme}://127.0.0.1:{port}"], capture_output=True, text=True).stdout
    return int(re.search(r"(\d+) requests in", out).group(1))


LIBC = "/lib/x86_64-linux-gnu/libc.so.6"

# The system calls a proxy makes on its request path (others are rare), for --syscall-counts.
COUNTED_SYSCALLS = ["recvfrom", "recvmsg", "read", "readv", "sendto", "sendmsg", "write",
                    "writev", "epoll_wait", "epoll_pwait", "epoll_ctl", "futex", "clock_gettime",
                    "timerfd_settime", "accept4", "close", "setsockopt", "ioctl"]


def start_syscall_count(pids, out):
    """Starts counting the system calls (and context switches) of `pids` into `out`."""
    events = ",".join(f"syscalls:sys_enter_{name}" for name in COUNTED_SYSCALLS)
    proc = subprocess.Popen(["perf", "stat", "-x,", "-e", events + ",context-switches", "-o", out,
                             "-p", ",".join(map(str, pids))])
    time.sleep(0.2)
    return proc


def stop_syscall_count(proc, out, n):
    """Stops the counter; returns ("name count/req, ...", total system calls per request)."""
    proc.send_signal(signal.SIGINT)
    proc.wait()
    counts = {}
    for row in open(out):
        parts = row.strip().split(",")
        if len(parts) > 2 and parts[0].isdigit():
            counts[parts[2].replace("syscalls:sys_enter_", "")] = int(parts[0]) / n
    os.unlink(out)
    switches = counts.pop("context-switches", 0.0)
    shown = [f"{name} {per:.2f}" for name, per in sorted(counts.items(), key=lambda kv: -kv[1])
             if per >= 0.005]
    return ", ".join(shown + [f"context-switches {switches:.2f}"]), sum(counts.values())


def libc_probe(function):
    """The perf event counting calls of libc's `function` (added once with `perf probe`)."""
    event = f"probe_libc:{function}"
    listed = subprocess.run(["perf", "probe", "-l"], capture_output=True, text=True).stdout
    if event not in listed.split():
        subprocess.run(["perf", "probe", "-q", "-x", LIBC, function], check=True)
    return event


def calls_per_request(pid, port, script, scheme, event):
    out = tempfile.NamedTemporaryFile(suffix=".txt", delete=False).name
    st = subprocess.Popen(["perf", "stat", "-x,", "-e", event, "-o", out, "-p", str(pid)])
    time.sleep(0.3)
    n = wrk(port, script, 8, 1, 3, scheme)
    st.send_signal(signal.SIGINT)
    st.wait()
    count = 0
    for row in open(out):
        parts = row.strip().split(",")
        if len(parts) > 2 and parts[2] == event and parts[0].isdigit():
            count = int(parts[0])
    os.unlink(out)
    return count / n


def instructions_per_request(which, backends, tmp, binary, tls_dir, scheme, kind, big, keep=None):
    """User-space instructions per request of `which` under callgrind (see the module doc); the
    dump is kept as `keep` when given (for callgrind_annotate --inclusive=yes)."""
    out = f"{tmp}/callgrind-{which}-{kind}.out"
    port = po.free_port()
    proxy = start_proxy(which, port, backends, tmp, binary, tls_dir,
                        wrapper=("valgrind", "-q", "--tool=callgrind", f"--callgrind-out-file={out}"))
    try:
        po.wait_port(port, timeout=120)
        time.sleep(3)  # first health probes, under valgrind
        script = f"{tmp}/{kind}.lua"
        with open(script, "w") as f:
            f.write(po.WRK_LUA % {"kind": kind, "big": big})
        wrk(port, script, 8, 1, 2, scheme)  # warm-up: pools, caches, the index
        subprocess.run(["callgrind_control", "-z", str(proxy.pid)], check=True,
                       capture_output=True)
        n = wrk(port, script, 8, 1, 8, scheme)
        subprocess.run(["callgrind_control", "-d", str(proxy.pid)], check=True,
                       capture_output=True)
    finally:
        proxy.terminate()
        proxy.wait()
    dumps = sorted(f for f in os.listdir(tmp) if f.startswith(f"callgrind-{which}-{kind}.out."))
    if not dumps:
        raise RuntimeError(f"callgrind wrote no dump for {which}")
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no",
                           f"{tmp}/{dumps[0]}"], capture_output=True, text=True).stdout
    total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
    if keep:
        shutil.copy(f"{tmp}/{dumps[0]}", keep)
    for f in os.listdir(tmp):
        if f.startswith(f"callgrind-{which}-{kind}.out"):
            os.unlink(f"{tmp}/{f}")
    return total / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(po.ROOT, "build/release/src/cli/warmroute"))
    ap.add_argument("--syscalls", action="store_true")
    ap.add_argument("--syscall-counts", action="store_true",
                    help="system calls per request from kernel tracepoints, at full speed")
    ap.add_argument("--mallocs", action="store_true")
    ap.add_argument("--libc-calls", metavar="FUNCTION", action="append",
                    help="also calls of this libc function per request, counted as --mallocs "
                    "counts malloc's (repeatable; e.g. pthread_mutex_lock)")
    ap.add_argument("--instructions", action="store_true",
                    help="user-space instructions per request, under callgrind (slow)")
    ap.add_argument("--perf", metavar="PREFIX",
                    help="also record a call-graph profile of each run: PREFIX-PROXY-BODY.data (with "
                    "--instructions: the callgrind dump, PREFIX-PROXY-BODY.callgrind)")
    ap.add_argument("--perf-hz", type=int, default=499, metavar="HZ",
                    help="--perf's sampling rate; above 499 without call graphs (one per sample "
                    "would make the file hundreds of MB), for `perf annotate` of a hot function")
    ap.add_argument("--peers", action="store_true",
                    help="also the CPU time per request of the nginx backend and of wrk")
    ap.add_argument("--tls", metavar="DIR", help="warmroute listens with TLS (DIR/server.pem, .key)")
    ap.add_argument("--threads", type=int, default=2, metavar="N",
                    help="worker threads of every proxy (warmroute's listen.threads, HAProxy's "
                    "nbthread, nginx's worker_processes) in the timed runs, instead of "
                    "bench/proxy_overhead.py's 2")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the list of proxies this many times, interleaved")
    ap.add_argument("proxies", nargs="*", default=["haproxy", "nginx", "round_robin", "warmroute"])
    a = ap.parse_args()
    scheme = "https" if a.tls else "http"
    counted_calls = (["malloc"] if a.mallocs else []) + (a.libc_calls or [])
    call_events = [(name, libc_probe(name)) for name in counted_calls]
    if a.tls:
        a.proxies = [p for p in a.proxies if p not in ("haproxy", "nginx")]
    tmp = tempfile.mkdtemp(prefix="wr-proxy-cost-")
    backends = [po.free_port() for _ in range(4)]
    with open(f"{tmp}/b.conf", "w") as f:
        f.write(po.nginx_backend_conf(tmp, backends))
    backend = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", f"{tmp}/b.conf",
                                "-p", tmp])
    time.sleep(0.3)
    backend_pids = [backend.pid] + [int(p) for p in subprocess.run(
        ["pgrep", "-P", str(backend.pid)], capture_output=True, text=True).stdout.split()]
    try:
        for spec in a.proxies * a.rounds:
            # PROXY@BINARY: a warmroute proxy run from another binary (A/B of two builds).
            which, _, override = spec.partition("@")
            binary = override or a.bin
            label = f"{which}@{os.path.basename(override)}" if override else which
            name = label.replace("@", "-")  # in file names
            if a.instructions:
                if which == "nginx":
                    print("nginx        (no --instructions: it forks its workers)", flush=True)
                    continue
                for kind, big in (("200b", "false"), ("12k", "true")):
                    keep = f"{a.perf}-{name}-{kind}.callgrind" if a.perf else None
                    per_request = instructions_per_request(which, backends, tmp, binary, a.tls,
                                                           scheme, kind, big, keep)
                    print(f"{label:12} {kind:5} instructions {per_request:8.0f}/req", flush=True)
                continue
            port = po.free_port()
            proxy = start_proxy(which, port, backends, tmp, binary, a.tls, threads=a.threads)
            try:
                po.wait_port(port)
                time.sleep(1.5)  # first health probes
                pids = [proxy.pid] + [int(p) for p in subprocess.run(
                    ["pgrep", "-P", str(proxy.pid)], capture_output=True, text=True).stdout.split()]
                for kind, big in (("200b", "false"), ("12k", "true")):
                    script = f"{tmp}/{kind}.lua"
                    with open(script, "w") as f:
                        f.write(po.WRK_LUA % {"kind": kind, "big": big})
                    profiler = None
                    if a.perf:
                        graph = ["--call-graph", "dwarf,8192"] if a.perf_hz <= 499 else []
                        profiler = subprocess.Popen(
                            ["perf", "record", "-q", *graph, "-F", str(a.perf_hz), "-o",
                             f"{a.perf}-{name}-{kind}.data", "-p", ",".join(map(str, pids))],
                            stderr=subprocess.DEVNULL)
                    counter = (start_syscall_count(pids, f"{tmp}/count.txt")
                               if a.syscall_counts else None)
                    warmroute = which not in ("haproxy", "nginx")  # as start_proxy decides
                    locks_before = lock_waits(port, scheme) if warmroute else None
                    before = [cpu_us(p) for p in pids]
                    peers_before = ([cpu_us(p) for p in backend_pids],
                                    resource.getrusage(resource.RUSAGE_CHILDREN))
                    n = wrk(port, script, 64, 2, 4, scheme)
                    after = [cpu_us(p) for p in pids]
                    peers_after = ([cpu_us(p) for p in backend_pids],
                                   resource.getrusage(resource.RUSAGE_CHILDREN))
                    counted = stop_syscall_count(counter, f"{tmp}/count.txt", n) if counter else None
                    locks_after = lock_waits(port, scheme) if warmroute else None
                    if profiler:
                        profiler.send_signal(signal.SIGINT)
                        profiler.wait()
                    user = sum(x[0] - y[0] for x, y in zip(after, before)) / n
                    sys_ = sum(x[1] - y[1] for x, y in zip(after, before)) / n
                    line = (f"{label:12} {kind:5} {n / 4:8.0f} req/s  user {user:6.1f} us/req  "
                            f"sys {sys_:6.1f} us/req")
                    if a.peers:
                        # wrk is this script's only child that ran in between: RUSAGE_CHILDREN.
                        nginx = sum(x[0] + x[1] - y[0] - y[1]
                                    for x, y in zip(peers_after[0], peers_before[0])) / n
                        ru0, ru1 = peers_before[1], peers_after[1]
                        load = ((ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)) * 1e6 / n
                        line += f"  backend {nginx:5.1f} us/req  wrk {load:5.1f} us/req"
                    if locks_before and locks_after:
                        waits = (locks_after[0] - locks_before[0]) / n
                        waited = (locks_after[1] - locks_before[1]) * 1e6 / n
                        line += f"  lock waits {waits:5.3f}/req {waited:5.2f} us/req"
                    if counted:
                        line += f"  syscalls {counted[1]:5.2f}/req ({counted[0]})"
                    if a.syscalls:
                        st = subprocess.Popen(["strace", "-c", "-f", "-o", f"{tmp}/st.txt", "-p",
                                               str(proxy.pid)], stderr=subprocess.DEVNULL)
                        time.sleep(0.5)
                        n = wrk(port, script, 8, 1, 3, scheme)
                        st.send_signal(signal.SIGINT)
                        st.wait()
                        calls = 0
                        by_name = {}
                        for row in open(f"{tmp}/st.txt"):
                            parts = row.split()
                            if len(parts) >= 5 and parts[3].isdigit() and parts[-1] != "total":
                                calls += int(parts[3])
                                by_name[parts[-1]] = int(parts[3])
                        top = sorted(by_name.items(), key=lambda kv: -kv[1])[:6]
                        line += f"  syscalls {calls / n:5.2f}/req (" + ", ".join(
                            f"{name} {count / n:.2f}" for name, count in top) + ")"
                    for name, event in call_events:
                        per_request = calls_per_request(proxy.pid, port, script, scheme, event)
                        shown = "mallocs" if name == "malloc" else f"{name} calls"
                        line += f"  {shown} {per_request:5.1f}/req"
                    print(line, flush=True)
            finally:
                proxy.terminate()
                proxy.wait()
    finally:
        backend.terminate()
        backend.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
