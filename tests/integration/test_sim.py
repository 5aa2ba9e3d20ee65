"""`warmroute sim` on bad input: every bad flag, trace file or output path exits 2 with a message
naming the problem (the flag as typed, or file:line and the value) before any simulation runs —
never a crash, a silently ignored flag or a silently wrong run.

No sockets: `warmroute sim` runs on virtual time; each case here stops at the checks (a second
or less), and one small valid run shows the checks let a good command through.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from emulator_process import binary

SMALL = ["--profile", "tiny", "--replicas", "2", "--requests", "20", "--no-bounds",
         "--policies", "round_robin"]
SPEC = ["--requests", "20", "--no-bounds"]  # no fleet or policy flags


def run_sim(args, timeout=60):
    return subprocess.run([binary(), "sim", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


class SimBadInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="warmroute-sim-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def trace(self, name, *lines):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            for line in lines:
                f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
        return path

    def assert_refused(self, args, *says):
        r = run_sim(args)
        self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
        for text in says:
            self.assertIn(text, r.stderr, args)
        self.assertNotIn("terminate", r.stderr)
        self.assertNotIn("runtime error", r.stderr)
        self.assertNotIn("requests simulated", r.stderr, "refused only after simulating")
        return r.stderr

    def record(self, **fields):
        rec = {"timestamp": 0, "input_length": 100, "output_length": 5, "hash_ids": [1]}
        rec.update(fields)
        return rec

    # 1. Lengths beyond the trace reader's bounds.
    def test_huge_trace_lengths_name_file_line_and_value(self):
        ok = self.record()
        # 20M tokens built a ~90 MB prompt (671M tokens: bad_alloc); INT64_MAX overflowed.
        long_in = self.trace("long_in.jsonl", ok, self.record(
            input_length=20_000_000, hash_ids=list(range(39063))))
        self.assert_refused(["--workload", f"trace:{long_in}", *SMALL],
                            "long_in.jsonl:2:", "input_length", "at most 10000000",
                            "got 20000000")
        huge_in = self.trace("huge_in.jsonl", self.record(input_length=2**63 - 1))
        self.assert_refused(["--workload", f"trace:{huge_in}", *SMALL],
                            "huge_in.jsonl:1:", "got 9223372036854775807")
        huge_out = self.trace("huge_out.jsonl", ok, ok, self.record(output_length=2**63 - 1))
        self.assert_refused(["--workload", f"trace:{huge_out}", *SMALL],
                            "huge_out.jsonl:3:", "output_length", "at most 1000000")

    # 2. Timestamps and rates whose arrivals overflow.
    def test_huge_timestamps_are_refused(self):
        for ts in ("1e300", "1e16", "18446744073709551615"):
            path = self.trace("huge_ts.jsonl", self.record(),
                              '{"timestamp": %s, "input_length": 100, "output_length": 5, '
                              '"hash_ids": [1]}' % ts)
            self.assert_refused(["--workload", f"trace:{path}", *SMALL],
                                "huge_ts.jsonl:2:", "timestamp", "at most")

    def test_a_slow_trace_speed_that_overflows_is_refused(self):
        path = self.trace("slow.jsonl", self.record(), self.record(timestamp=5000))
        self.assert_refused(["--workload", f"trace:{path}", "--trace-speed", "1e-300", *SMALL],
                            "slow.jsonl:2:", "speed 1e-300")

    def test_a_rate_too_low_to_represent_is_refused(self):
        self.assert_refused(["--rate", "1e-12", *SMALL], "--rate 1e-12 is too low")

    # 3. --rate values that were ignored.
    def test_bad_rates_are_refused_naming_the_flag(self):
        for rate in ("-5", "0", "nan", "-inf", "inf"):
            stderr = self.assert_refused(["--rate", rate, *SMALL], "--rate")
            self.assertNotIn("rate_per_s", stderr)

    # 4. --policy-param.
    def test_policy_params_for_no_running_policy_are_refused(self):
        self.assert_refused([*SPEC, "--profile", "tiny", "--policies", "warmroute",
                             "--policy-param", "warmrute.balance_factor=2"],
                            "warmrute.balance_factor=2", 'no policy "warmrute"', "warmroute")
        self.assert_refused([*SMALL, "--policy-param", "warmroute.balance_factor=2"],
                            'no policy "warmroute"', "round_robin")

    def test_policy_param_values_are_checked(self):
        all_policies = [*SPEC, "--profile", "tiny", "--policies", "warmroute,consistent_hash"]
        self.assert_refused([*all_policies, "--policy-param", "consistent_hash.virtual_nodes=1.5"],
                            "--policy-param", "virtual_nodes", "whole number in [1, 10000]",
                            "got 1.5")
        self.assert_refused([*all_policies, "--policy-param", "warmroute.balance_factor=inf"],
                            "balance_factor", "finite")
        self.assert_refused([*all_policies, "--policy-param", "warmroute.max_homes=1e300"],
                            "max_homes", "in [1, 100000]", "got 1e+300")

    # 5. Flags that contradict each other.
    def test_conflicting_flags_are_refused_naming_both(self):
        ok = self.trace("ok.jsonl", self.record())
        cases = [
            (["--replica-spec", "tiny", "--profile", "nope"], ["--replica-spec", "--profile"]),
            (["--replica-spec", "tiny", "--kv-capacity-tokens", "5000"],
             ["--replica-spec", "--kv-capacity-tokens"]),
            (["--replica-spec", "tiny", "--kv-capacity-tokens", "-5"], ["--kv-capacity-tokens"]),
            (["--replica-spec", "tiny", "--replicas", "5"], ["--replica-spec", "--replicas"]),
            (["--profile", "tiny", "--workload", f"trace:{ok}", "--rate", "5"],
             ["--rate", "trace"]),
            (["--profile", "tiny", "--workload", f"trace:{ok}", "--load", "0.5"],
             ["--load", "trace"]),
            (["--profile", "tiny", "--trace-speed", "2"], ["--trace-speed", "trace"]),
            (["--profile", "tiny", "--trace-jitter-s", "2"], ["--trace-jitter-s", "trace"]),
            (["--profile", "tiny", "--workload", f"trace:{ok}", "--trace-jitter-s", "-1"],
             ["--trace-jitter-s"]),
            (["--profile", "tiny", "--gateways", "2", "--gossip", "maybe"], ["--gossip", "maybe"]),
            (["--profile", "tiny", "--gateways", "2", "--gossip-loss", "2"], ["--gossip-loss"]),
            (["--profile", "tiny", "--gateways", "2", "--gossip-interval-ms", "0"],
             ["--gossip-interval-ms"]),
            (["--profile", "tiny", "--sweep-loads", "0.5", "--load", "5"],
             ["--sweep-loads", "--load"]),
            (["--profile", "tiny", "--rate", "5", "--load", "0.5"], ["--rate", "--load"]),
            (["--profile", "tiny", "--sweep-loads", ","], ["--sweep-loads", "no load"]),
            (["--replica-spec", "tiny:count=2:count=3"], ["--replica-spec", "count given twice"]),
            (["--profile", "tiny", "--calibration-requests", "0"], ["--calibration-requests"]),
            (["--profile", "tiny", "--calibration-requests", "-5"], ["--calibration-requests"]),
        ]
        for args, says in cases:
            self.assert_refused([*SPEC, "--policies", "round_robin", *args], *says)

    # 6. Messages name the flag as typed and the right bound.
    def test_messages_name_the_flag_and_the_bound(self):
        stderr = self.assert_refused([*SMALL, "--replicas", "99999999999999999999"],
                                     "--replicas", "[1, 100000]", "99999999999999999999")
        self.assertNotIn("9223372036854775807", stderr)
        stderr = self.assert_refused([*SMALL, "--tenants", "0"], "--tenants")
        self.assertNotIn("num_tenants", stderr)
        stderr = self.assert_refused([*SMALL, "--requests", "-1"], "--requests")
        self.assertNotIn("num_requests", stderr)
        ok = self.trace("ok.jsonl", self.record())
        stderr = self.assert_refused(["--workload", f"trace:{ok}", "--trace-speed", "inf", *SMALL],
                                     "--trace-speed")
        self.assertNotIn("trace_speed", stderr)
        self.assert_refused([*SMALL, "--sweep-loads", "inf"], "--sweep-loads", "inf")
        self.assert_refused([*SMALL, "--load", "-1"], "--load")
        # CLI11 alone would read -1 as 2^64 - 1.
        self.assert_refused([*SMALL, "--seed", "-1"], "--seed",
                            "[0, 18446744073709551615], got -1")

    # 7. Trace files that cannot be read.
    def test_unreadable_traces_say_why_and_exit_2(self):
        missing = os.path.join(self.tmp, "missing.jsonl")
        self.assert_refused(["--workload", f"trace:{missing}", *SMALL], missing,
                            "No such file or directory")
        self.assert_refused(["--workload", f"trace:{self.tmp}", *SMALL], "Is a directory")
        self.assert_refused(["--workload", "trace:/proc/self/status", *SMALL],
                            "/proc/self/status:1: invalid JSON")

    # 8. Output paths are checked before the run.
    def test_output_paths_are_checked_up_front_with_the_reason(self):
        a_file = self.trace("a_file.txt", "x")
        self.assert_refused([*SMALL, "--rate", "5", "--json", self.tmp], "--json",
                            "is a directory")
        missing = os.path.join(self.tmp, "missing")
        self.assert_refused([*SMALL, "--rate", "5", "--markdown", os.path.join(missing, "x.md")],
                            "--markdown", missing, "does not exist")
        self.assert_refused([*SMALL, "--rate", "5", "--plots", a_file], "--plots", a_file)
        self.assert_refused([*SMALL, "--rate", "5", "--json", ""], "--json", "empty")

    def test_a_write_that_fails_after_the_run_says_why(self):
        # /dev/full passes the check up front; writing to it fails with ENOSPC.
        r = run_sim([*SMALL, "--rate", "5", "--json", "/dev/full"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot write /dev/full: No space left on device", r.stderr)

    def test_a_valid_run_still_runs(self):
        out = os.path.join(self.tmp, "out.json")
        r = run_sim([*SMALL, "--rate", "5", "--json", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            self.assertIn("policies", json.load(f))

    def test_precise_mode_flags_are_checked(self):
        self.assert_refused([*SMALL, "--prefix-mode", "exact"], "--prefix-mode", "exact")
        for flag, value in (("--event-loss", "0.1"), ("--event-replay", "off"),
                            ("--event-delay-ms", "1"), ("--key-max-tokens", "8192")):
            self.assert_refused([*SMALL, flag, value], flag, "--prefix-mode precise")
        precise = [*SMALL, "--prefix-mode", "precise"]
        self.assert_refused([*precise, "--event-loss", "1.5"], "--event-loss", "[0, 1]")
        self.assert_refused([*precise, "--event-loss", "nan"], "--event-loss")
        self.assert_refused([*precise, "--event-replay", "maybe"], "--event-replay", "maybe")
        self.assert_refused([*precise, "--event-delay-ms", "-1"], "--event-delay-ms")
        self.assert_refused([*precise, "--key-max-tokens", "8"], "--key-max-tokens", "[16,")


class SimPreciseModeTest(unittest.TestCase):
    """A small precise-mode run end to end through the CLI: the mode is reported, the KV events
    reach the router's index (its error below approximate mode's), and lost messages without
    replay show up as missed messages and rebuilds."""

    FLEET = ["--profile", "tiny", "--replicas", "4", "--kv-capacity-tokens", "32768",
             "--workload", "support-bot", "--requests", "300", "--rate", "40", "--seed", "7",
             "--no-bounds", "--policies", "warmroute,random"]

    def run_json(self, *args):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            r = run_sim([*self.FLEET, *args, "--json", out])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                return r.stdout, json.load(f)

    def test_events_reach_the_index(self):
        text, approximate = self.run_json()
        self.assertIn("prefix mode: approximate", text)
        text, precise = self.run_json("--prefix-mode", "precise")
        self.assertIn("prefix mode: precise", text)
        self.assertIn("idx-err", text)
        self.assertEqual(precise["prefix_mode"], "precise")
        for a, p in zip(approximate["policies"], precise["policies"]):
            self.assertEqual(p["prefix_mode"], "precise")
            self.assertGreater(p["kv_events"]["applied"], 0, p["name"])
            self.assertEqual(p["kv_events"]["rebuilds"], 0, p["name"])
            self.assertLess(p["index_error"], a["index_error"] / 4, p["name"])

    def test_loss_without_replay_rebuilds(self):
        text, run = self.run_json("--prefix-mode", "precise", "--event-loss", "0.05",
                                  "--event-replay", "off")
        self.assertIn("replay off", text)
        for p in run["policies"]:
            events = p["kv_events"]
            self.assertGreater(events["lost"], 0, p["name"])
            self.assertGreater(events["missed"], 0, p["name"])
            self.assertGreater(events["rebuilds"], 0, p["name"])
            self.assertGreater(events["routed_uncertain"], 0, p["name"])


if __name__ == "__main__":
    unittest.main()
