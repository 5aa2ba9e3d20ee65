#!/usr/bin/python3
"""Precise mode under failures, live: how long the gateway's event-fed prefix index takes to
recover, and the hit rate meanwhile.

Two `warmroute engine` processes (Qwen 3's tokenizer, KV events with replay) behind `warmroute
serve` in precise mode. A client sends chats one after another, cycling over 6 long system
prompts (about 1,500 tokens each) with a fresh question each time. After a warm-up, one failure
is made at t0:
  dropped   e0 runs with --kv-events-drop-every 4: every 4th message is lost and must be
            replayed (t0: the first replay; the window: until the 20th request after it)
  restart   e0 is killed and started again on the same ports
  reset     POST /reset_prefix_cache on e0
  removed   e1 is removed through the admin API
For each: `state` = t0 until every remaining backend's stream is precise again (metrics polled
every 10 ms; "never left precise" when no poll in the first second saw it uncertain), `exact` = t0 until the first request whose predicted cached tokens equal the
engine's reported ones with a cached prefix of at least 1,000 tokens, and the hit rate (reported
cached / prompt tokens) of the requests that finished in the 5 s after t0.

Usage: bench/precise_failures.py --bin build/release/src/cli/warmroute
Needs the Qwen 3 tokenizer files the build unpacks, and python3-zmq (tests/integration's helpers).
"""
import argparse
import json
import os
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOW_S = 5.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    args = parser.parse_args()
    os.environ["WARMROUTE_BIN"] = os.path.abspath(args.bin)
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
    global Engine, GatewayProcess, gateway_config, system_prompt, chat, metric_sum
    global access_lines, TOKEN
    from test_precise_events import (Engine, TOKEN, chat, gateway_config,  # noqa: E402
                                     system_prompt)
    from gateway_process import GatewayProcess  # noqa: E402
    from test_gateway import metric_sum  # noqa: E402
    from test_precise_keys import QWEN3, access_lines  # noqa: E402
    if QWEN3 is None:
        sys.exit("the Qwen 3 tokenizer files are absent (build the tokenize tests' data)")
    print("| failure | state precise again after (s) | predictions exact again after (s) | "
          f"hit rate in the {WINDOW_S:.0f} s after | requests in that window |")
    print("|---|---|---|---|---|")
    for name in ("dropped", "restart", "reset", "removed"):
        row = run(name)
        print(f"| {name} | {row['state']} | {row['exact']} | {row['hit_rate']:.2f} | "
              f"{row['requests']} |", flush=True)


class Client(threading.Thread):
    """Sends chats one after another until stopped; records (finish time, line) per request."""

    def __init__(self, gw):
        super().__init__(daemon=True)
        self.gw = gw
        self.stop = threading.Event()
        self.prompts = [system_prompt(f"bench {uuid.uuid4()}") for _ in range(6)]
        self.done = []  # (monotonic finish time, access-log line)

    def run(self):
        i = 0
        while not self.stop.is_set():
            body = chat(self.prompts[i % len(self.prompts)], f"question {i} {uuid.uuid4()}")
            status, _, data = self.gw.request("POST", "/v1/chat/completions", body)
            if status == 200:
                usage = json.loads(data)["usage"]
                self.done.append((time.monotonic(), i, usage))
            i += 1

    def lines(self):
        """Access-log lines of the chats, in order (one per request sent)."""
        return [l for l in access_lines(self.gw) if l["route"] == "chat"]


def metrics(gw):
    return gw.metrics_text()


def all_precise(gw, backends):
    text = metrics(gw)
    return all(metric_sum(text, "warmroute_kv_event_stream_state", backend=b, state="precise") == 1
               for b in backends)


def run(name):
    e0 = Engine(["--kv-events-drop-every", "4"] if name == "dropped" else []).start()
    e1 = Engine().start()
    try:
        config = gateway_config([e0.backend("e0"), e1.backend("e1")])
        config["observability"] = {"access_log": "stderr"}
        with GatewayProcess(config) as gw:
            client = Client(gw)
            client.start()
            # Warm-up: both streams precise, every prompt seen.
            deadline = time.monotonic() + 60
            while (len(client.done) < 24 or not all_precise(gw, ["e0", "e1"])) and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            remaining = ["e0", "e1"]
            if name == "dropped":
                before = metric_sum(metrics(gw), "warmroute_kv_events_total", backend="e0",
                                    result="replayed")
                while metric_sum(metrics(gw), "warmroute_kv_events_total", backend="e0",
                                 result="replayed") == before:
                    time.sleep(0.01)
                t0 = time.monotonic()
            elif name == "restart":
                t0 = time.monotonic()
                e0.stop()
                e0.start()
            elif name == "reset":
                t0 = time.monotonic()
                e0.replica.request("POST", "/reset_prefix_cache")
            else:
                t0 = time.monotonic()
                gw.request("DELETE", "/admin/backends/e1",
                           headers={"Authorization": f"Bearer {TOKEN}"})
                remaining = ["e0"]
            n0 = len(client.done)
            # The first poll after t0 at which every remaining stream is precise, having been
            # seen uncertain since t0 (else: never seen uncertain at this resolution).
            state_at, left = None, False
            while time.monotonic() < t0 + 60:
                if all_precise(gw, remaining):
                    if left or time.monotonic() > t0 + 1.0:
                        state_at = time.monotonic()
                        break
                else:
                    left = True
                time.sleep(0.01)
            time.sleep(max(0.0, t0 + WINDOW_S - time.monotonic()))
            client.stop.set()
            client.join(timeout=30)
            lines = client.lines()
            window = [(t, i, u) for t, i, u in client.done[n0:] if t <= t0 + WINDOW_S]
            prompt = sum(u["prompt_tokens"] for _, _, u in window)
            cached = sum(u["prompt_tokens_details"]["cached_tokens"] for _, _, u in window)
            exact_at = None
            for t, i, _ in client.done[n0:]:
                if i < len(lines):
                    line = lines[i]
                    if line.get("cached_tokens", 0) >= 1000 and \
                            line["predicted_cached_tokens"] == line.get("cached_tokens"):
                        exact_at = t
                        break
            state = (f"{state_at - t0:.2f}" if left else "never left precise") if state_at \
                else "> 60"
            return {"state": state,
                    "exact": f"{exact_at - t0:.2f}" if exact_at else f"> {WINDOW_S:.0f}",
                    "hit_rate": cached / prompt if prompt else 0.0, "requests": len(window)}
    finally:
        e0.stop()
        e1.stop()


if __name__ == "__main__":
    main()
