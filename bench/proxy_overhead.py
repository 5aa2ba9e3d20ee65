#!/usr/bin/python3
"""Proxy overhead of `warmroute serve` against HAProxy and nginx, in one run, on this machine.

Every contender proxies to the same trivial fast backend: nginx answering a fixed chat
completion JSON on 4 loopback ports (so the routers have 4 backends to choose from). wrk (2
threads, 64 connections by default) POSTs OpenAI chat bodies through each:

  direct       wrk -> backend (one of the 4 ports)
  haproxy      HAProxy 2.6 round robin, keep-alive both sides, option http-no-delay
  nginx        nginx round robin, upstream keepalive, proxy_buffering off
  wr-rr        warmroute serve --policy round_robin
  wr-warm      warmroute serve with the warmroute (prefix-aware) policy

Bodies: "12k" = a ~12 KB chat request (one of 64 system prompts of ~11.8 KB + a varying
question, so the prefix index works for real), "200b" = a ~200-byte chat request.
Each (contender, body) pair is measured `--rounds` times, interleaved round by round (the
machine is noisy and shared). Within a round the contenders run one after another in the order
nginx, wr-rr, haproxy, wr-warm, direct, reversed every other round: both warmroute contenders run
next to HAProxy, and a machine that speeds up or slows down steadily favours neither side of a
pair over two rounds. Added latency is the request latency p50 at 1 connection minus direct's.

The table gives each contender's median over the rounds and two ratios against HAProxy:
"paired", the median over rounds of the ratio within each round (the estimate the targets are
read from: it cancels the machine's changes of speed from round to round, which on this VM are
larger than the differences measured), and "of medians", the ratio of the two medians (thrown
off by those changes of speed). The same two for the added latency.

Usage: /usr/bin/python3 bench/proxy_overhead.py [--bin build/release/src/cli/warmroute]
       [--duration 8] [--rounds 3] [--connections 64] [--markdown]
Needs wrk, haproxy, nginx (scripts/install-deps.sh installs them).
"""
import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

RESPONSE = ('{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",'
            '"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},'
            '"finish_reason":"stop"}],"usage":{"prompt_tokens":3000,"completion_tokens":1,'
            '"total_tokens":3001,"prompt_tokens_details":{"cached_tokens":2992}}}')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


WRK_LUA = r"""
-- Rotates through pre-built chat bodies: %(kind)s
local bodies = {}
local n = 0
init = function(args)
  local big = %(big)s
  for g = 0, 63 do
    local system
    if big then
      system = string.rep("Policy " .. g .. ": answer politely, cite the handbook section. ", 190)
    else
      system = "You are bot " .. g .. "."
    end
    for q = 0, 3 do
      local body = '{"model":"m","max_tokens":16,"messages":[{"role":"system","content":"' ..
        system .. '"},{"role":"user","content":"Question ' .. q .. ' from customer ' .. g ..
        '?"}]}'
      bodies[#bodies + 1] = body
    end
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end
request = function()
  n = n + 1
  return wrk.format(nil, "/v1/chat/completions", nil, bodies[(n %% #bodies) + 1])
end
"""


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
        self.procs.append(p)
        return p

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()


def nginx_backend_conf(tmp, ports):
    listens = "\n".join(f"    listen 127.0.0.1:{p} reuseport;" for p in ports)
    return f"""
worker_processes 1;
daemon off;
pid {tmp}/backend.pid;
error_log {tmp}/backend.err warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/cbt; proxy_temp_path {tmp}/pt; fastcgi_temp_path {tmp}/ft;
  uwsgi_temp_path {tmp}/ut; scgi_temp_path {tmp}/st;
  keepalive_requests 1000000;
  client_body_buffer_size 64k;
  server {{
{listens}
    location / {{
      default_type application/json;
      return 200 '{RESPONSE}';
    }}
  }}
}}
"""


def nginx_proxy_conf(tmp, port, backends, threads=2):
    servers = "\n".join(f"    server 127.0.0.1:{p};" for p in backends)
    return f"""
worker_processes {threads};
daemon off;
pid {tmp}/proxy.pid;
error_log {tmp}/proxy.err warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/pcbt; proxy_temp_path {tmp}/ppt; fastcgi_temp_path {tmp}/pft;
  uwsgi_temp_path {tmp}/put; scgi_temp_path {tmp}/pst;
  keepalive_requests 1000000;
  client_body_buffer_size 64k;
  upstream backends {{
{servers}
    keepalive 256;
  }}
  server {{
    listen 127.0.0.1:{port} reuseport;
    location / {{
      proxy_pass http://backends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }}
  }}
}}
"""


def haproxy_conf(port, backends, threads=2):
    servers = "\n".join(f"  server b{i} 127.0.0.1:{p}" for i, p in enumerate(backends))
    return f"""
global
  nbthread {threads}
  maxconn 8000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
  option http-no-delay
  http-reuse always
frontend fe
  bind 127.0.0.1:{port}
  default_backend be
backend be
  balance roundrobin
{servers}
"""


def warmroute_conf(port, backends, policy, threads=2):
    lines = [
        "listen:", "  host: 127.0.0.1", f"  port: {port}", f"  threads: {threads}",
        "policy:", f"  name: {policy}",
        "backends:",
    ]
    for i, p in enumerate(backends):
        lines += [f"  - name: b{i}", f"    url: http://127.0.0.1:{p}", "    kind: openai",
                  "    models: [m]"]
    lines += ["scrape:", "  interval_ms: 0", "observability:", "  access_log: 'off'",
              "  response_headers: false"]
    return "\n".join(lines) + "\n"


_REQ = re.compile(r"Requests/sec:\s+([\d.]+)")
_LAT50 = re.compile(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", re.M)


def to_us(value, unit):
    return float(value) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]


def run_wrk(port, script, connections, threads, duration):
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "-s", script,
         f"http://127.0.0.1:{port}"], capture_output=True, text=True, check=True).stdout
    rps = float(_REQ.search(out).group(1))
    m = _LAT50.search(out)
    p50 = to_us(m.group(1), m.group(2)) if m else float("nan")
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock_err = re.search(r"Socket errors: (.*)", out)
    if errors or sock_err:
        raise RuntimeError(f"wrk reported errors on port {port}:\n{out}")
    return rps, p50


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/src/cli/warmroute"))
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    for tool in ("wrk", "haproxy", "nginx"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            sys.exit(f"proxy_overhead: {tool} is not installed (run scripts/install-deps.sh)")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"

    tmp = tempfile.mkdtemp(prefix="wr-proxy-bench-")
    procs = Procs()
    try:
        backends = [free_port() for _ in range(4)]
        with open(f"{tmp}/backend.conf", "w") as f:
            f.write(nginx_backend_conf(tmp, backends))
        procs.start([nginx, "-c", f"{tmp}/backend.conf", "-p", tmp])
        ports = {"direct": backends[0]}
        ports["haproxy"] = free_port()
        with open(f"{tmp}/haproxy.cfg", "w") as f:
            f.write(haproxy_conf(ports["haproxy"], backends))
        procs.start([haproxy, "-f", f"{tmp}/haproxy.cfg"])
        ports["nginx"] = free_port()
        with open(f"{tmp}/proxy.conf", "w") as f:
            f.write(nginx_proxy_conf(tmp, ports["nginx"], backends))
        procs.start([nginx, "-c", f"{tmp}/proxy.conf", "-p", tmp])
        for name, policy in (("wr-rr", "round_robin"), ("wr-warm", "warmroute")):
            ports[name] = free_port()
            with open(f"{tmp}/{name}.yaml", "w") as f:
                f.write(warmroute_conf(ports[name], backends, policy))
            procs.start([args.bin, "serve", "--config", f"{tmp}/{name}.yaml", "--log-level",
                         "warn"])
        for name, port in list(ports.items()) + [(f"backend {p}", p) for p in backends]:
            try:
                wait_port(port)
            except RuntimeError:
                dead = [p.stderr.read().decode() for p in procs.procs if p.poll() is not None]
                sys.exit(f"proxy_overhead: {name} does not listen on {port}: {dead}")
        time.sleep(1.5)  # first health probes
        scripts = {}
        for kind, big in (("12k", "true"), ("200b", "false")):
            scripts[kind] = f"{tmp}/{kind}.lua"
            with open(scripts[kind], "w") as f:
                f.write(WRK_LUA % {"kind": kind, "big": big})

        # Run order within a round (reversed every other round): see the docstring.
        order = ["nginx", "wr-rr", "haproxy", "wr-warm", "direct"]
        assert sorted(order) == sorted(ports)
        names = ["direct", "haproxy", "nginx", "wr-rr", "wr-warm"]  # the table's order
        rps = {(n, k): [] for n in names for k in scripts}
        lat = {(n, k): [] for n in names for k in scripts}
        for r in range(args.rounds):
            for kind, script in scripts.items():
                for n in (order if r % 2 == 0 else order[::-1]):
                    run_wrk(ports[n], script, args.connections, 2, 2)  # warm-up
                    value, _ = run_wrk(ports[n], script, args.connections, 2, args.duration)
                    rps[(n, kind)].append(value)
                    _, p50 = run_wrk(ports[n], script, 1, 1, max(2, args.duration // 2))
                    lat[(n, kind)].append(p50)
                    print(f"round {r + 1} {kind:4} {n:8} {value:9.0f} req/s  "
                          f"p50 @1 conn {p50:7.1f} us", file=sys.stderr, flush=True)
        rows = []
        for kind in scripts:
            base = rps[("haproxy", kind)]
            direct = lat[("direct", kind)]
            direct_m = statistics.median(direct)
            base_added = [h - d for h, d in zip(lat[("haproxy", kind)], direct)]
            base_added_m = statistics.median(lat[("haproxy", kind)]) - direct_m
            for n in names:
                m_rps = statistics.median(rps[(n, kind)])
                paired = statistics.median(x / b for x, b in zip(rps[(n, kind)], base))
                of_medians = m_rps / statistics.median(base)
                m_lat = statistics.median(lat[(n, kind)])
                added = m_lat - direct_m
                added_paired = added_of_medians = None
                if n != "direct":
                    ratios = [(x - d) / b for x, d, b in zip(lat[(n, kind)], direct, base_added)
                              if b > 0]
                    if ratios:
                        added_paired = statistics.median(ratios)
                    if base_added_m > 0:
                        added_of_medians = added / base_added_m
                rows.append((kind, n, m_rps, paired, of_medians, m_lat, added, added_paired,
                             added_of_medians))
        header = ("| body | contender | req/s (median) | vs HAProxy, paired | vs HAProxy, of "
                  "medians | p50 µs @1 conn | added µs | added vs HAProxy, paired | added vs "
                  "HAProxy, of medians |")
        print(header)
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")

        # Three decimals: a target at 0.9 is not met by a 0.897 that would print as 0.90.
        def fmt(x):
            return "" if x is None else f"{x:.3f}"

        for kind, n, m_rps, paired, of_medians, m_lat, added, added_p, added_m in rows:
            added_s = "" if n == "direct" else f"{added:.0f}"
            print(f"| {kind} | {n} | {m_rps:.0f} | {fmt(paired)} | {fmt(of_medians)} | {m_lat:.0f} "
                  f"| {added_s} | {fmt(added_p)} | {fmt(added_m)} |")
        print(f"\n{args.rounds} interleaved rounds of {args.duration} s (order alternating), "
              f"wrk -t2 -c{args.connections}; latency: wrk -t1 -c1; {os.cpu_count()} cores.")
    finally:
        procs.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
