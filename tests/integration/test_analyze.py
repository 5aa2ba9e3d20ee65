"""`warmroute analyze` end to end (src/analyze, src/cli/analyze_command.cc) on request files with
planted prefix-hygiene defects (workloads/requests/make_planted.py): each defect is found and
quantified, a clean file reports none, a Mooncake trace gets its sharing figures, --plots draws
what the report says, and bad input gets a message naming the file's line.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from emulator_process import EmulatorProcess, binary
from gateway_process import GatewayProcess, run_serve
from test_gateway import wait_until

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLANT = os.path.join(ROOT, "workloads", "requests", "make_planted.py")


def planted(kind, requests=200):
    out = subprocess.run([sys.executable, PLANT, kind, "--requests", str(requests)],
                         capture_output=True, text=True, check=True)
    return out.stdout


class AnalyzeTest(unittest.TestCase):
    def analyze(self, content, *args, expect=0):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "requests.jsonl")
            with open(path, "w") as f:
                f.write(content)
            json_path = os.path.join(tmp, "report.json")
            md_path = os.path.join(tmp, "report.md")
            run = subprocess.run([binary(), "analyze", path, "--json", json_path,
                                  "--markdown", md_path, *args],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, expect, run.stderr)
            if expect != 0:
                return run
            with open(json_path) as f:
                report = json.load(f)
            with open(md_path) as f:
                report["_markdown"] = f.read()
            report["_stdout"] = run.stdout
            return report

    def test_each_planted_defect_is_found_and_its_fix_quantified(self):
        for kind, finding, min_gain in (("timestamp", "timestamp", 0.5),
                                        ("request-id", "uuid", 0.5),
                                        ("tools", "tools_key_order", 0.03),
                                        ("greeting", "per_user_text", 0.01),
                                        ("whitespace", "whitespace", 0.05)):
            with self.subTest(kind=kind):
                report = self.analyze(planted(kind))
                kinds = [f["kind"] for f in report["findings"]]
                self.assertEqual(kinds, [finding], report["_stdout"])
                f = report["findings"][0]
                self.assertGreaterEqual(f["requests"], 180, f)
                self.assertGreater(f["hit_rate_fixed"], f["hit_rate_now"] + min_gain, f)
                self.assertIn(f["what"], report["_stdout"])
                self.assertIn(f["what"], report["_markdown"])
                self.assertTrue(f["example"] and f["example_other"], f)

    def test_a_clean_file_has_no_finding(self):
        report = self.analyze(planted("clean"))
        self.assertEqual(report["findings"], [])
        self.assertGreater(report["sharing_share"], 0.9)
        self.assertGreater(report["infinite_cache_hit_rate"], 0.9)
        self.assertIn("no early difference found", report["_stdout"])

    def test_a_mixed_file_lists_every_defect(self):
        report = self.analyze(planted("mixed", 400))
        kinds = {f["kind"] for f in report["findings"]}
        self.assertEqual(kinds, {"timestamp", "uuid", "tools_key_order", "per_user_text"})

    def test_no_examples_keeps_prompt_text_out(self):
        report = self.analyze(planted("timestamp"), "--no-examples")
        self.assertNotIn("Current time", report["_stdout"] + report["_markdown"])
        self.assertNotIn("Current time", json.dumps(report["findings"]))

    def test_a_mooncake_trace_gets_its_sharing_figures(self):
        lines = []
        for i in range(50):
            ids = [0, 1, 2] + [100 + i]  # three shared 512-token blocks, one own
            lines.append(json.dumps({"timestamp": i * 100, "input_length": 4 * 512,
                                     "output_length": 10, "hash_ids": ids}))
        report = self.analyze("\n".join(lines) + "\n")
        self.assertEqual(report["format"], "mooncake")
        self.assertEqual(report["requests"], 50)
        self.assertAlmostEqual(report["sharing_share"], 49 / 50)
        self.assertAlmostEqual(report["infinite_cache_hit_rate"], 49 * 3 / 200)
        self.assertEqual(report["findings"], [])
        self.assertIn("not available for a trace", report["_stdout"])

    def test_the_simulator_replays_the_file_on_a_fleet(self):
        report = self.analyze(planted("mixed"), "--replicas", "2", "--profile",
                              "llama-3.1-8b-h100", "--policies", "warmroute,round_robin")
        out = report["_stdout"]
        self.assertIn("replayed on 2 x llama-3.1-8b-h100", out)
        for row in ("warmroute ", "round_robin ", "pooled-cache bound"):
            self.assertIn(row, out)
        fleet = report["fleet"]
        self.assertEqual([p["policy"] for p in fleet["policies"]], ["warmroute", "round_robin"])
        self.assertGreater(fleet["policies"][0]["hit_rate"], fleet["policies"][1]["hit_rate"])
        self.assertGreaterEqual(fleet["pooled_hit_rate"], fleet["policies"][0]["hit_rate"] - 0.01)
        self.assertIn("## On 2 x llama-3.1-8b-h100", report["_markdown"])
        run = self.analyze(planted("clean", 5), "--replicas", "2", "--profile", "no-such",
                           expect=1)
        self.assertIn("no-such", run.stderr)

    def test_sizing_finds_the_smallest_fleet_and_plots_the_curve(self):
        with tempfile.TemporaryDirectory() as plots:
            report = self.analyze(planted("clean"), "--profile", "llama-3.1-8b-h100",
                                  "--target-hit-rate", "0.9", "--max-replicas", "4",
                                  "--plots", plots)
            out = report["_stdout"]
            self.assertIn("sizing for hit rate >= 90.0%", out)
            self.assertRegex(out, r"smallest fleet that meets it: \d+ x llama-3.1-8b-h100")
            # 3 KV sizes x replicas 1, 2, 4.
            rows = [l for l in out.splitlines() if l.rstrip().endswith("yes")]
            self.assertGreaterEqual(len(rows), 1)
            sizing = report["sizing"]
            self.assertEqual(len(sizing["points"]), 9)  # 3 KV sizes x 1, 2, 4 replicas
            smallest = sizing["smallest"]
            self.assertGreaterEqual(smallest["hit_rate"], 0.9)
            self.assertEqual(min(p["replicas"] * p["kv_tokens_per_replica"]
                                 for p in sizing["points"] if p["meets"]),
                             smallest["replicas"] * smallest["kv_tokens_per_replica"])
            self.assertIn("## Sizing", report["_markdown"])
            for png in ("sizing.png", "prefix_groups.png", "hygiene.png"):
                self.assertGreater(os.path.getsize(os.path.join(plots, png)), 1000, png)
        report = self.analyze(planted("timestamp"), "--profile", "llama-3.1-8b-h100",
                              "--target-hit-rate", "0.9", "--max-replicas", "2")
        self.assertIn("no fleet of the grid meets it", report["_stdout"])
        self.assertIsNone(report["sizing"]["smallest"])

    def test_plots_draw_the_groups_and_the_findings(self):
        def rows(path):
            with open(path) as f:
                return [l.split() for l in f if l.strip() and not l.startswith("#")]

        with tempfile.TemporaryDirectory() as plots:
            report = self.analyze(planted("mixed", 400), "--groups", "5", "--plots", plots)
            for png in ("prefix_groups.png", "hygiene.png"):
                self.assertGreater(os.path.getsize(os.path.join(plots, png)), 1000, png)
            self.assertFalse(os.path.exists(os.path.join(plots, "sizing.png")))
            # Every group of two or more, biggest first: the report's listed ones lead.
            groups = rows(os.path.join(plots, "prefix_groups.dat"))
            self.assertGreater(report["groups_total"], len(report["groups"]))
            self.assertEqual(len(groups), report["groups_total"])
            self.assertEqual([int(g[0]) for g in groups], list(range(1, len(groups) + 1)))
            for row, group in zip(groups, report["groups"]):
                self.assertEqual(int(row[1]), group["requests"])
                distance = group["reuse_distance_s"]
                self.assertAlmostEqual(float(row[2]), distance, delta=1e-5 * max(1, distance))
            self.assertEqual(sorted((int(g[1]) for g in groups), reverse=True),
                             [int(g[1]) for g in groups])
            bars = rows(os.path.join(plots, "hygiene.dat"))
            self.assertEqual([b[0] for b in bars], [f["kind"] for f in report["findings"]])
            for bar, f in zip(bars, report["findings"]):
                self.assertAlmostEqual(float(bar[1]) / 100, f["hit_rate_now"], places=5)
                self.assertAlmostEqual(float(bar[2]) / 100, f["hit_rate_fixed"], places=5)
                self.assertEqual(int(bar[3]), f["requests"])
            # No finding: the chart is drawn with a note, its data holds no bar; a rerun into the
            # same directory leaves none of the earlier file's bars behind.
            report = self.analyze(planted("clean"), "--plots", plots)
            self.assertEqual(report["findings"], [])
            self.assertEqual(rows(os.path.join(plots, "hygiene.dat")), [])
            self.assertGreater(os.path.getsize(os.path.join(plots, "hygiene.png")), 1000)
            with open(os.path.join(plots, "hygiene.gp")) as f:
                self.assertIn("no early difference", f.read())
            self.assertEqual(len(rows(os.path.join(plots, "prefix_groups.dat"))),
                             report["groups_total"])

    def test_bad_input_names_the_line(self):
        content = planted("clean", 3) + '{"model": "m"}\n'
        run = self.analyze(content, expect=1)
        self.assertRegex(run.stderr, r"requests\.jsonl:4: neither `messages`")
        run = self.analyze("", expect=1)
        self.assertIn("empty file", run.stderr)
        run = subprocess.run([binary(), "analyze", "/nonexistent/file.jsonl"],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 1)
        self.assertIn("/nonexistent/file.jsonl", run.stderr)


class RequestSampleTest(unittest.TestCase):
    """observability.sample_requests: the gateway writes what clients sent, and analyze reads it."""

    def test_the_gateways_sample_is_what_analyze_reads(self):
        requests = [json.loads(line) for line in planted("timestamp", 30).splitlines()]
        with tempfile.TemporaryDirectory() as tmp, \
                EmulatorProcess(["--profile", "tiny", "--no-jitter"]) as engine:
            sample = os.path.join(tmp, "sample.jsonl")
            replica = engine.replicas[0]
            config = {"backends": [{"url": f"http://{replica.host}:{replica.port}"}],
                      "observability": {"access_log": "off",
                                        "sample_requests": {"file": sample, "rate": 1}}}
            with GatewayProcess(config) as gw:
                for body in requests:
                    body = {k: v for k, v in body.items() if k != "timestamp"}
                    body["model"] = "tiny"
                    body["max_tokens"] = 2
                    status, _, data = gw.request("POST", "/v1/chat/completions", body)
                    self.assertEqual(status, 200, data[:300])
                self.assertTrue(any("prompts included" in l for l in gw.output), gw.output)
                def lines_written():
                    if not os.path.exists(sample):
                        return 0
                    with open(sample) as f:
                        return sum(1 for _ in f)
                wait_until(lambda: lines_written() == len(requests), timeout=10,
                           message="every request in the sample")
            with open(sample) as f:
                lines = [json.loads(l) for l in f]
            self.assertEqual(lines[0]["messages"], requests[0]["messages"])
            self.assertIsInstance(lines[0]["timestamp"], float)
            json_path = os.path.join(tmp, "report.json")
            run = subprocess.run([binary(), "analyze", sample, "--json", json_path],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            with open(json_path) as f:
                report = json.load(f)
            self.assertEqual([f["kind"] for f in report["findings"]], ["timestamp"])

    def test_a_bad_sample_config_names_the_key(self):
        for sample, message in (({"file": "/tmp/x.jsonl", "rate": 0}, "sample_requests.rate"),
                                ({"rate": 0.5}, "sample_requests.file"),
                                ({"file": "/tmp/x.jsonl", "rate": 0.5, "x": 1}, "x")):
            code, out, err = run_serve(
                {"backends": [{"url": "http://127.0.0.1:9"}],
                 "observability": {"sample_requests": sample}}, ["--check-config"])
            self.assertNotEqual(code, 0, sample)
            self.assertIn(message, err + out, sample)


if __name__ == "__main__":
    unittest.main()
