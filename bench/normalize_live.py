#!/usr/bin/python3
"""Prompt normalisation live: the engine-reported hit rate and TTFT p50 of each planted-defect
request file (workloads/requests/make_planted.py), without and with the gateway's normalize rules
(src/gateway/proxy/normalize.h).

`warmroute engine` (2 replicas of --profile, real time, serving the files' model `acme-support`)
behind one `warmroute serve` (policy warmroute) whose tenants are one per (file, rules) pair, each
isolated (its own cache_salt: every run starts cold, and no run warms another's cache). Each
file's requests are sent in order, one at a time (streamed, 8 output tokens instead of the file's
200: TTFT is what the prompt changes), as the tenant of each rule set:
  none                 no rule
  collapse_whitespace  that rule alone
  canonical_tools      that rule alone
  move_to_end          that rule alone, patterns ^Current time: .*$ and ^Request id: .*$
  all                  the three
Hit rate: Σ usage.prompt_tokens_details.cached_tokens / Σ usage.prompt_tokens of the run's
answers (as the engine reports them); TTFT: request sent to first content chunk, at the client.

Usage: /usr/bin/python3 bench/normalize_live.py [--bin build/release/src/cli/warmroute]
       [--requests 100] [--files clean,timestamp,tools,whitespace,request-id,greeting,mixed]
       [--profile llama-3.1-8b-h100]
"""
import argparse
import hashlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from emulator_process import EmulatorProcess  # noqa: E402
from gateway_process import GatewayProcess  # noqa: E402

MODEL = "acme-support"
PATTERNS = ["^Current time: .*$", "^Request id: .*$"]
RULE_SETS = {
    "none": {},
    "collapse_whitespace": {"collapse_whitespace": True},
    "canonical_tools": {"canonical_tools": True},
    "move_to_end": {"move_to_end": PATTERNS},
    "all": {"collapse_whitespace": True, "canonical_tools": True, "move_to_end": PATTERNS},
}


def planted(kind, requests):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "workloads", "requests",
                                                       "make_planted.py"), kind,
                          "--requests", str(requests)],
                         check=True, capture_output=True, text=True).stdout
    bodies = []
    for line in out.splitlines():
        body = json.loads(line)
        body.pop("timestamp", None)
        body.update({"max_tokens": 8, "stream": True, "stream_options": {"include_usage": True}})
        bodies.append(body)
    return bodies


def send(gw, key, body):
    """(ttft seconds, prompt tokens, cached tokens) of one streamed request."""
    conn = http.client.HTTPConnection(gw.host, gw.port, timeout=60)
    try:
        start = time.monotonic()
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json",
                              "Authorization": f"Bearer {key}"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:300]!r}")
        ttft = None
        usage = None
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if ttft is None and any(c.get("delta", {}).get("content")
                                    for c in chunk.get("choices", [])):
                ttft = time.monotonic() - start
            if chunk.get("usage"):
                usage = chunk["usage"]
        details = usage.get("prompt_tokens_details") or {}
        return ttft, usage["prompt_tokens"], details.get("cached_tokens", 0)
    finally:
        conn.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build/release/src/cli/warmroute"))
    p.add_argument("--requests", type=int, default=100)
    p.add_argument("--files", default="clean,timestamp,tools,whitespace,request-id,greeting,mixed")
    p.add_argument("--profile", default="llama-3.1-8b-h100")
    a = p.parse_args()
    os.environ["WARMROUTE_BIN"] = os.path.abspath(a.bin)
    files = a.files.split(",")
    runs = [(f, r) for f in files for r in RULE_SETS]
    tenants, normalize = [], []
    for f, r in runs:
        name = f"{f}.{r}"
        tenants.append({"name": name,
                        "api_keys_sha256": [hashlib.sha256(f"sk-{name}".encode()).hexdigest()]})
        if RULE_SETS[r]:
            normalize.append(dict({"tenant": name}, **RULE_SETS[r]))
    print("| file | rules | hit rate | TTFT p50 ms | hit rate, no rule | TTFT p50 ms, no rule |")
    print("|---|---|---:|---:|---:|---:|")
    with EmulatorProcess(["--profile", a.profile, "--replicas", "2", "--model", MODEL],
                         replicas=2) as engine:
        config = {"listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
                  "policy": {"name": "warmroute"},
                  "backends": [{"name": f"r{i}", "url": f"http://{r.host}:{r.port}"}
                               for i, r in enumerate(engine.replicas)],
                  "observability": {"access_log": "off"},
                  "tenancy": {"salt_secret": "normalize-bench-salt-secret"},
                  "tenants": tenants, "normalize": normalize}
        with GatewayProcess(config) as gw:
            for f in files:
                bodies = planted(f, a.requests)
                base = None
                for r in RULE_SETS:
                    ttfts, prompt, cached = [], 0, 0
                    for body in bodies:
                        ttft, p_tokens, c_tokens = send(gw, f"sk-{f}.{r}", body)
                        ttfts.append(ttft)
                        prompt += p_tokens
                        cached += c_tokens
                    hit, p50 = cached / prompt, statistics.median(ttfts) * 1e3
                    base = base or (hit, p50)
                    print(f"| {f} | {r} | {hit:.1%} | {p50:.1f} | {base[0]:.1%} | {base[1]:.1f} |",
                          flush=True)
    print(f"\n2 x {a.profile} (warmroute engine, real time), policy warmroute, {a.requests} "
          "requests per file and rule set, sent one at a time, 8 output tokens each.")


if __name__ == "__main__":
    sys.exit(main())
