"""`warmroute sim --membership`: the flag's error cases exit 2 with a message naming the problem
(never a crash), and a valid run writes the dip figures to the JSON, the Markdown and the plot.

No sockets: `warmroute sim` runs on virtual time. A few seconds in all (tiny fleet, few requests).
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from emulator_process import binary

SMALL = ["--profile", "tiny", "--kv-capacity-tokens", "32768", "--workload", "support-bot",
         "--requests", "300", "--rate", "40", "--seed", "7", "--no-bounds",
         "--policies", "warmroute,consistent_hash"]


def run_sim(args, timeout=120):
    return subprocess.run([binary(), "sim", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


class SimMembershipFlagTest(unittest.TestCase):
    def assert_flag_error(self, args, says):
        r = run_sim(args)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--membership", r.stderr)
        self.assertIn(says, r.stderr)
        self.assertNotIn("Assertion", r.stderr)

    def test_bad_spec(self):
        self.assert_flag_error(["--membership", "foo", *SMALL, "--replicas", "4"], "no '@'")
        self.assert_flag_error(["--membership", "grow@3", *SMALL, "--replicas", "4"],
                               "unknown change")
        self.assert_flag_error(["--membership", "remove@abc", *SMALL, "--replicas", "4"],
                               "not a number of seconds")
        self.assert_flag_error(["--membership", "remove@-1", *SMALL, "--replicas", "4"],
                               "positive")

    def test_time_beyond_the_run(self):
        # 300 requests at 40 req/s arrive over about 7.5 s.
        self.assert_flag_error(["--membership", "remove@60", *SMALL, "--replicas", "4"],
                               "beyond the run")

    def test_time_beyond_a_trace(self):
        trace = os.path.join(os.path.dirname(__file__), "..", "..", "workloads", "traces",
                             "conversation_trace.jsonl")
        self.assert_flag_error(["--membership", "add@100000", "--replicas", "4",
                                "--workload", f"trace:{trace}", "--requests", "50",
                                "--no-bounds", "--policies", "round_robin"],
                               "not before the last arrival")

    def test_remove_with_one_replica(self):
        self.assert_flag_error(["--membership", "remove@3", *SMALL, "--replicas", "1"],
                               "at least 2 replicas")


class SimMembershipRunTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="wr-sim-membership-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_remove_reports_dip_and_sends_nothing_to_the_removed_replica(self):
        out = os.path.join(self.dir, "run.json")
        md = os.path.join(self.dir, "run.md")
        r = run_sim(["--membership", "remove@3", "--hit-window-s", "0.5", "--dip-baseline-s", "2",
                     *SMALL, "--replicas", "4", "--json", out, "--markdown", md])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("membership change: remove r", r.stdout)
        with open(out) as f:
            report = json.load(f)
        self.assertEqual([p["name"] for p in report["policies"]],
                         ["warmroute", "consistent_hash"])
        for policy in report["policies"]:
            m = policy["membership"]
            self.assertEqual(m["kind"], "remove")
            self.assertEqual(m["at_s"], 3)
            self.assertEqual(m["requests_to_replica_after_change"], 0)
            self.assertEqual(policy["replicas"][m["replica"]]["requests_after_change"], 0)
            self.assertGreater(policy["replicas"][m["replica"]]["requests"], 0)
            self.assertGreater(m["windows_before"], 0)
            self.assertGreater(m["windows_after"], 0)
            self.assertGreater(m["hit_rate_before"], 0)
            series = policy["hit_rate_series"]
            self.assertEqual(series["window_s"], 0.5)
            self.assertEqual(len(series["hit_rate"]), len(series["prompt_tokens"]))
        with open(md) as f:
            self.assertIn("| policy | hit before (last 2 s) |", f.read())


if __name__ == "__main__":
    unittest.main()
