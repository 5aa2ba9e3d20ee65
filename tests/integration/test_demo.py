"""`warmroute demo`, shortened (few requests, fast emulated time): exit 0, one table row per
policy, the files in --out, warmroute's engine-reported hit rate above round robin's, also with
the load sent to the Responses API (`--api responses`); SIGINT in the middle of a run stops every
child process it started; a bad --api exits 2 naming the flag.

Standard library only; the binary comes from $WARMROUTE_BIN.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from emulator_process import binary

POLICIES = ["round_robin", "least_request", "consistent_hash", "warmroute"]
# Short enough for well under 60 s on 2 busy cores, long enough for repeated prefixes: 100 system
# prompts under Zipf 0.6, so about half of 250 requests reuse a prompt seen before.
SHORT = ["--requests", "250", "--time-scale", "0.25"]


def children_of(pid):
    """PIDs whose parent is `pid`, from /proc/*/stat."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may contain spaces and parentheses.
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def alive(pid):
    """True if `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


class DemoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="warmroute-demo-")
        cls.out = os.path.join(cls.tmp, "demo-out")
        start = time.monotonic()
        cls.proc = subprocess.run([binary(), "demo", *SHORT, "--out", cls.out],
                                  capture_output=True, text=True, timeout=120,
                                  stdin=subprocess.DEVNULL)
        cls.wall_s = time.monotonic() - start

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def hit_rate(self, policy):
        with open(os.path.join(self.out, policy, "results.json")) as f:
            return json.load(f)["summary"]["engine_hit_rate"]

    def test_exits_zero_within_a_minute(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr[-3000:])
        self.assertLess(self.wall_s, 60)

    def test_table_has_a_row_per_policy(self):
        lines = self.proc.stdout.splitlines()
        header = [i for i, line in enumerate(lines) if line.startswith("policy ")]
        self.assertEqual(len(header), 1, self.proc.stdout)
        self.assertIn("hit rate (engine)", lines[header[0]])
        rows = [line.split()[0] for line in lines[header[0] + 2:header[0] + 2 + len(POLICIES)]]
        self.assertEqual(rows, POLICIES, self.proc.stdout)
        # Every figure was measured: a row has a percentage and no "-" placeholder.
        for line in lines[header[0] + 2:header[0] + 2 + len(POLICIES)]:
            self.assertRegex(line, r"\d+\.\d%")
            self.assertNotIn(" - ", line)
        self.assertIn("time-scale 0.25", self.proc.stdout)
        self.assertIn("Regime:", self.proc.stdout)

    def test_writes_report_compare_and_per_policy_results(self):
        for name in ["report.md", "compare.txt"]:
            self.assertTrue(os.path.isfile(os.path.join(self.out, name)), name)
        if shutil.which("gnuplot"):
            self.assertTrue(os.path.isfile(os.path.join(self.out, "ttft_cdf_compare.png")))
        for policy in POLICIES:
            for name in ["results.json", "report.md"]:
                self.assertTrue(os.path.isfile(os.path.join(self.out, policy, name)),
                                f"{policy}/{name}")
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        for policy in POLICIES:
            self.assertIn(f"| {policy} |", report)

    def test_warmroute_hits_the_cache_more_than_round_robin(self):
        warm, rr = self.hit_rate("warmroute"), self.hit_rate("round_robin")
        self.assertIsNotNone(warm)
        self.assertIsNotNone(rr)
        self.assertGreater(warm, rr + 0.1, f"warmroute {warm:.3f} vs round_robin {rr:.3f}")


class DemoResponsesTest(unittest.TestCase):
    """`demo --api responses` with round robin and warmroute only: the same table, each request a
    POST /v1/responses."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="warmroute-demo-responses-")
        cls.out = os.path.join(cls.tmp, "demo-out")
        cls.proc = subprocess.run(
            [binary(), "demo", *SHORT, "--api", "responses", "--policies",
             "round_robin,warmroute", "--out", cls.out],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def results(self, policy):
        with open(os.path.join(self.out, policy, "results.json")) as f:
            return json.load(f)

    def test_runs_the_responses_api_and_warmroute_hits_more(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr[-3000:])
        self.assertIn("sent to POST /v1/responses", self.proc.stdout)
        for policy in ("round_robin", "warmroute"):
            r = self.results(policy)
            self.assertEqual(r["config"]["api"], "responses")
            self.assertEqual(r["summary"]["failed"], 0, r["summary"]["errors"])
            self.assertGreater(r["summary"]["ttft_s"]["p50"], 0)
        warm = self.results("warmroute")["summary"]["engine_hit_rate"]
        rr = self.results("round_robin")["summary"]["engine_hit_rate"]
        self.assertGreater(warm, rr + 0.1, f"warmroute {warm:.3f} vs round_robin {rr:.3f}")

    def test_a_bad_api_exits_2_naming_the_flag(self):
        proc = subprocess.run([binary(), "demo", "--api", "anthropic", "--out",
                               os.path.join(self.tmp, "bad")],
                              capture_output=True, text=True, timeout=20,
                              stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--api", proc.stderr)
        self.assertIn('got "anthropic"', proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "bad")), "refused before running")


class DemoInterruptTest(unittest.TestCase):
    def test_sigint_mid_run_stops_every_child(self):
        tmp = tempfile.mkdtemp(prefix="warmroute-demo-int-")
        self.addCleanup(shutil.rmtree, tmp, True)
        # Slow emulated time and many requests: the first run is still going when SIGINT comes.
        proc = subprocess.Popen(
            [binary(), "demo", "--requests", "5000", "--time-scale", "1",
             "--out", os.path.join(tmp, "out")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            text=True)
        running = threading.Event()
        stderr = []

        def read_stderr():
            for line in proc.stderr:
                stderr.append(line)
                if re.search(r"gateway \(pid \d+\) up at", line):
                    running.set()

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        try:
            self.assertTrue(running.wait(60), "".join(stderr)[-3000:])
            time.sleep(2)  # the load is flowing
            children = children_of(proc.pid)
            self.assertEqual(len(children), 2, f"expected engine + gateway, got {children}")
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(timeout=5)
        proc.stderr.close()
        self.assertEqual(code, 130, "".join(stderr)[-3000:])
        left = [pid for pid in children if alive(pid)]
        self.assertEqual(left, [], "children still running after the demo exited")
        self.assertIn("interrupted", "".join(stderr))


if __name__ == "__main__":
    unittest.main()
