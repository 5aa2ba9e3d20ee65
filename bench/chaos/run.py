#!/usr/bin/python3
"""A chaos soak of the gateway: mixed traffic from several tenants through two gateways while a
fault schedule runs, with invariants checked on every request; exit status 1 when one broke.

Fleet and faults: fleet.py. Clients and how a response is judged: traffic.py. The invariants
and the report: verdict.py. docs/chaos.md has the figures of a 10-minute run.

Traffic: `--clients` loops, each sending one request after another, chosen with a seeded RNG:
tenant alpha, beta or metered (rate-limited to 4 requests/s across both gateways through
Redis), gateway A or B, streaming or not, a short prompt or a long one (a ~6 KB system prompt
its tenant's clients share), max_tokens 4..256, and a behaviour: normal, slow_send (the body in
pieces 0.25 s apart, 10%), disconnect (streams only: the client closes after two events, 10% of
streams) or abandon (the client closes as soon as its request is sent, 3%). Besides,
an isolation probe every 2 s: alpha sends a fresh prompt twice through gateway A, then beta the
same prompt through gateway B, which must report cached_tokens 0.

Schedule: after the warm-up (15% of the run, at least 8 s), the faults of fleet.FAULT_KINDS in
turn, one at a time, each for 60% of its slot (slot: the rest of the run divided among them,
at most 30 s), repeated until the last 5% of the run.

Usage: /usr/bin/python3 bench/chaos/run.py [--duration 600] [--bin build/release/src/cli/warmroute]
       [--clients 10] [--replicas 8] [--seed 1] [--faults kill,stop,...|none] [--out DIR] (DIR gets report.json and rss.svg)
       [--gateway-bin build/asan/src/cli/warmroute] (gateways from another build; engines: --bin)
"""
import argparse
import asyncio
import json
import os
import random
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import fleet as fleet_mod  # noqa: E402
import gateway_process  # noqa: E402  (tests/integration, on the path fleet.py set)
import verdict  # noqa: E402
from fleet import FAULT_KINDS, KEYS, MODEL, Fleet  # noqa: E402
from traffic import Record, send_request  # noqa: E402

FILLER = ("Policy: answer in English, cite the handbook section, never invent figures, keep "
          "answers under two hundred words, and escalate billing questions to a human. ")


def client_deadlines():
    """(head_timeout, idle_timeout) in seconds: what the gateway's configuration promises, plus
    a margin for a loaded machine. A response head comes within the admission queue's wait, the
    connects of every attempt and one first-byte wait (a first-byte timeout is not retried);
    each later piece within idle_stream_ms."""
    t = fleet_mod.TIMEOUTS
    head = (fleet_mod.QUEUE_TIMEOUT_MS + (fleet_mod.RETRIES + 1) * t["connect_ms"]
            + t["first_byte_ms"]) / 1000 + 5
    idle = t["idle_stream_ms"] / 1000 + 5
    return head, idle


class Soak:
    def __init__(self, args):
        self.args = args
        self.fleet = Fleet(args.replicas, args.seed)
        self.records = []
        self.windows = []      # (kind, begin, end) monotonic
        self.samples = []      # (t, gateway, rss_kb, fds)
        self.exits = []        # (t, gateway, code)
        self.retries = {}      # (gateway, series) -> highest value seen
        self.index_samples = []  # (t, gateway, prefix index entries, bytes)
        self.stop_at = None
        self.t0 = None
        self.head_timeout, self.idle_timeout = client_deadlines()
        self.systems = {t: [f"[{t} team {k}] " + FILLER * 30 for k in range(2)] for t in KEYS}

    async def request(self, tenant, gw_index, stream, behaviour, body):
        gw = self.fleet.gateways[gw_index]
        start = time.monotonic()
        rec = Record(start, start, tenant, gw_index, stream, behaviour)
        rec.outcome = await send_request(gw.host, gw.port, body, KEYS[tenant], stream=stream,
                                         behaviour=behaviour, head_timeout=self.head_timeout,
                                         idle_timeout=self.idle_timeout)
        rec.end = time.monotonic()
        self.records.append(rec)
        return rec

    async def client(self, index):
        rng = random.Random(self.args.seed * 1000 + index)
        n = 0
        while time.monotonic() < self.stop_at:
            n += 1
            tenant = rng.choice(("alpha", "alpha", "beta", "beta", "metered"))
            stream = rng.random() < 0.5
            roll = rng.random()
            behaviour = "normal"
            if roll < 0.1:
                behaviour = "slow_send"
            elif roll < 0.2 and stream:
                behaviour = "disconnect"
            elif roll < 0.23:
                behaviour = "abandon"
            messages = []
            if rng.random() < 0.4:
                messages.append({"role": "system", "content": rng.choice(self.systems[tenant])})
            messages.append({"role": "user", "content": f"client {index} question {n}: "
                             + "tell me more. " * rng.randint(1, 20)})
            body = {"model": MODEL, "messages": messages, "max_tokens": rng.choice(
                (4, 8, 16, 32, 64, 256)), "stream": stream}
            if stream:
                body["stream_options"] = {"include_usage": True}
            await self.request(tenant, rng.randrange(2), stream, behaviour, body)
            await asyncio.sleep(rng.uniform(0, 0.05))

    async def isolation_probe(self):
        """alpha sends prompt P twice (the second must hit its cache, else the probe proves
        nothing), then beta sends P: an isolated tenant must see cached_tokens 0."""
        while time.monotonic() < self.stop_at:
            prompt = f"{uuid.uuid4()} " + FILLER * 8
            body = {"model": MODEL, "max_tokens": 4, "stream": False,
                    "messages": [{"role": "user", "content": prompt}]}
            for tenant, gw in (("alpha", 0), ("alpha", 0), ("beta", 1)):
                rec = await self.request(tenant, gw, False, "probe", body)
                rec.probe = (prompt[:36], tenant)
            await asyncio.sleep(2)

    async def read_metrics(self, i):
        """Keeps the highest value seen of each warmroute_retries_total series (a removed
        backend's series leaves /metrics with it) and the prefix index's size."""
        try:
            text = await asyncio.to_thread(self.fleet.metrics, i)
        except OSError:
            return
        index = {}
        for line in text.splitlines():
            for name in ("warmroute_prefix_index_entries", "warmroute_prefix_index_bytes"):
                if line.startswith(name + " "):
                    index[name] = float(line.split()[1])
        self.index_samples.append((time.monotonic(), i, index.get(
            "warmroute_prefix_index_entries", -1), index.get("warmroute_prefix_index_bytes", -1)))
        for line in text.splitlines():
            if line.startswith("warmroute_retries_total"):
                series, _, value = line.rpartition(" ")
                key = (i, series)
                self.retries[key] = max(self.retries.get(key, 0.0), float(value))

    async def sampler(self):
        while True:
            now = time.monotonic()
            for i in range(2):
                s = self.fleet.gateway_sample(i)
                if s is None:
                    if not any(g == i for _, g, _ in self.exits):
                        code = self.fleet.gateways[i]._proc.poll()
                        self.exits.append((now, i, code))
                        print(f"[chaos] gateway {'AB'[i]} exited with {code}", flush=True)
                else:
                    self.samples.append((now, i, s[0], s[1]))
                    await self.read_metrics(i)
            if now >= self.stop_at:
                return
            await asyncio.sleep(2)

    async def schedule(self):
        """Slot i begins at warm-up + i * slot; its fault runs for 60% of the slot."""
        d = self.args.duration
        warmup = max(8.0, 0.15 * d)
        tail = 0.05 * d
        slot = min(30.0, (d - warmup - tail) / max(1, len(self.args.faults)))
        i = 0
        while self.args.faults and warmup + i * slot + 0.6 * slot <= d - tail + 1e-6:
            kind = self.args.faults[i % len(self.args.faults)]
            await asyncio.sleep(max(0.0, self.t0 + warmup + i * slot - time.monotonic()))
            begin = time.monotonic()
            await asyncio.to_thread(self.fleet.begin, kind)
            await asyncio.sleep(max(0.0, begin + 0.6 * slot - time.monotonic()))
            await asyncio.to_thread(self.fleet.end, kind)
            self.windows.append((kind, begin, time.monotonic()))
            i += 1

    async def run(self):
        await self.fleet.start()
        self.t0 = time.monotonic()
        self.stop_at = self.t0 + self.args.duration
        print(f"[chaos] fleet up: {self.args.replicas} engines, 2 gateways (pids "
              f"{[g._proc.pid for g in self.fleet.gateways]}), redis :{self.fleet.redis.port}; "
              f"running {self.args.duration:.0f} s", flush=True)
        tasks = [asyncio.create_task(self.client(i)) for i in range(self.args.clients)]
        tasks += [asyncio.create_task(self.isolation_probe()),
                  asyncio.create_task(self.sampler()),
                  asyncio.create_task(self.schedule())]
        await asyncio.gather(*tasks)
        for i in range(2):
            await self.read_metrics(i)
        # What the gateways hold open once the traffic has stopped.
        await asyncio.sleep(2)
        sockets = [self.fleet.sockets(i) for i in range(2)]
        await self.fleet.proxy.stop()
        return sockets


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/src/cli/warmroute"))
    ap.add_argument("--gateway-bin", default=None,
                    help="the gateways' binary (e.g. build/asan/src/cli/warmroute); default --bin")
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--faults", default=",".join(FAULT_KINDS),
                    help=f"the schedule's faults, in order (default {','.join(FAULT_KINDS)}; "
                         "'none': traffic only)")
    ap.add_argument("--out", default=None, help="directory for report.json and rss.svg")
    args = ap.parse_args()
    args.faults = [] if args.faults == "none" else args.faults.split(",")
    unknown = [f for f in args.faults if f not in FAULT_KINDS]
    if unknown:
        ap.error(f"unknown fault {unknown[0]!r}: known are {', '.join(FAULT_KINDS)}")
    if args.replicas < 6:
        ap.error("--replicas must be at least 6 (the faults hit r1..r5)")
    if args.duration < 30:
        ap.error("--duration must be at least 30 s (warm-up, then every fault once)")
    if not os.access(args.bin, os.X_OK):
        ap.error(f"{args.bin} is not an executable: build it (cmake --build --preset release "
                 "--target warmroute) or pass --bin")
    os.environ["WARMROUTE_BIN"] = os.path.abspath(args.bin)
    if args.gateway_bin:
        if not os.access(args.gateway_bin, os.X_OK):
            ap.error(f"{args.gateway_bin} is not an executable")
        # GatewayProcess finds the binary through this name; the engines keep --bin.
        gateway_process.binary = lambda: os.path.abspath(args.gateway_bin)
    soak = Soak(args)
    started = time.monotonic()
    try:
        sockets = asyncio.run(soak.run())
    finally:
        soak.fleet.stop()
    # After the stop: a sanitizer's leak report comes at exit.
    stderr_all = ["".join(gw.output) for gw in soak.fleet.gateways]
    exit_codes = [gw._proc.returncode for gw in soak.fleet.gateways]
    report = verdict.judge(soak, sockets, stderr_all, exit_codes)
    report["wall_s"] = round(time.monotonic() - started, 1)
    verdict.print_report(report)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "report.json"), "w") as f:
            json.dump(report, f, indent=1)
        with open(os.path.join(args.out, "rss.svg"), "w") as f:
            f.write(verdict.rss_svg(soak))
        print(f"report: {os.path.join(args.out, 'report.json')}, plot: "
              f"{os.path.join(args.out, 'rss.svg')}")
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
