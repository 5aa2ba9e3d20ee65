"""`warmroute bench` against a 2-replica `warmroute engine --profile tiny`: results.json fields,
report and summary, engine-metrics hit rate, `bench compare`, the Responses API (`--api
responses`) through a gateway, and the error cases (unreachable URL, malformed trace, bad flags, a
server that is not OpenAI).

Standard library only (http.client directly: the environment's HTTP proxy must not be used).
"""
import http.server
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import unittest

from emulator_process import EmulatorProcess, binary
from gateway_process import GatewayProcess


def run_bench(args, timeout=90):
    return subprocess.run([binary(), "bench", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def read_text(path):
    with open(path) as f:
        return f.read()


def closed_port():
    """A loopback port with nothing listening on it (a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _HtmlHandler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b"<html><body>It works!</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class BenchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="warmroute-bench-")
        cls.engine = EmulatorProcess(["--profile", "tiny", "--replicas", "2"], replicas=2)
        cls.engine.__enter__()
        cls.urls = [f"http://{r.host}:{r.port}" for r in cls.engine.replicas]
        # One run shared by several tests: support-bot with few prompts, so prefixes repeat.
        cls.out = os.path.join(cls.tmp, "warm")
        cls.proc = run_bench(
            ["--url", cls.urls[0], "--url", cls.urls[1],
             "--engine-metrics", cls.urls[0] + "/metrics",
             "--engine-metrics", cls.urls[1] + "/metrics",
             "--workload", "support-bot", "--workload-param", "system_prompts=3",
             "--workload-param", "system_prompt_tokens=600", "--workload-param", "max_tokens=8",
             "--requests", "40", "--rate", "80", "--seed", "3", "--name", "warm",
             "--out", cls.out])
        results = os.path.join(cls.out, "results.json")
        cls.results = load_json(results) if os.path.exists(results) else None

    @classmethod
    def tearDownClass(cls):
        cls.engine.__exit__(None, None, None)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_run_succeeds_and_prints_the_summary(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertIn("TTFT p50 (ms)", self.proc.stdout)
        self.assertIn("token hit rate", self.proc.stdout)
        self.assertIn("40/40 done", self.proc.stderr)  # the progress line's last state

    def test_results_have_every_request_with_timings_and_usage(self):
        r = self.results
        self.assertIsNotNone(r, self.proc.stderr)
        self.assertEqual(r["name"], "warm")
        s = r["summary"]
        self.assertEqual(s["requests"], 40)
        self.assertEqual(s["succeeded"], 40, s["errors"])
        self.assertEqual(s["failed"], 0)
        self.assertEqual(len(r["requests"]), 40)
        self.assertGreater(s["ttft_s"]["p50"], 0)
        self.assertGreaterEqual(s["ttft_s"]["p99"], s["ttft_s"]["p50"])
        self.assertGreater(s["requests_per_s"], 0)
        self.assertGreater(s["output_tokens_per_s"], 0)
        for q in r["requests"]:
            self.assertEqual(q["status"], 200)
            self.assertEqual(q["error_kind"], "")
            self.assertGreater(q["ttft_s"], 0)
            self.assertGreaterEqual(q["e2e_s"], q["ttft_s"])
            self.assertTrue(q["usage_reported"])
            self.assertGreater(q["prompt_tokens"], 600)
            self.assertEqual(q["completion_tokens"], len(q["itl_s"]) + 1)
        ids = sorted(q["id"] for q in r["requests"])
        self.assertEqual(ids, list(range(40)))

    def test_hit_rates_from_responses_and_engines(self):
        s = self.results["summary"]
        # 3 system prompts of 600 tokens over 40 requests: most prompt tokens are cached.
        self.assertGreater(s["token_hit_rate"], 0.3)
        self.assertIsNotNone(s["engine_hit_rate"])
        self.assertGreater(s["engine_hit_rate"], 0.3)
        total_cached = sum(q["cached_tokens"] for q in self.results["requests"])
        self.assertEqual(total_cached, s["cached_tokens"])

    def test_backend_share_from_engine_counters(self):
        s = self.results["summary"]
        self.assertEqual(s["backend_source"], "engine_metrics")
        self.assertEqual(len(s["backends"]), 2)
        self.assertEqual(sum(b["requests"] for b in s["backends"]), 40)
        self.assertAlmostEqual(s["load_skew"], 1.0, delta=0.11)  # round-robin over the URLs

    def test_report_and_plots_are_written(self):
        report = read_text(os.path.join(self.out, "report.md"))
        self.assertIn("# warmroute bench: warm", report)
        self.assertIn("TTFT p99 (ms)", report)
        if shutil.which("gnuplot"):
            for png in ("ttft_cdf.png", "ttft_over_time.png", "hit_rate_over_time.png",
                        "backend_load.png"):
                self.assertTrue(os.path.getsize(os.path.join(self.out, png)) > 0, png)

    def test_compare_prints_both_runs(self):
        cold = os.path.join(self.tmp, "cold")
        proc = run_bench(["--url", self.urls[0], "--workload", "unique", "--requests", "10",
                          "--rate", "100", "--workload-param", "max_tokens=4", "--no-stream",
                          "--no-plots", "--out", cold])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        cold_results = load_json(os.path.join(cold, "results.json"))
        self.assertEqual(cold_results["summary"]["succeeded"], 10)
        self.assertFalse(cold_results["config"]["stream"])
        cmp_out = os.path.join(self.tmp, "cmp")
        proc = run_bench(["compare", os.path.join(self.out, "results.json"),
                          os.path.join(cold, "results.json"), "--out", cmp_out])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        header = proc.stdout.splitlines()[0]
        self.assertIn("warm", header)
        self.assertIn("unique", header)  # the default name: the workload
        self.assertIn("TTFT p50 (ms)", proc.stdout)
        if shutil.which("gnuplot"):
            self.assertTrue(os.path.exists(os.path.join(cmp_out, "ttft_cdf_compare.png")))

    def test_compare_rejects_a_file_that_is_not_results(self):
        bogus = os.path.join(self.tmp, "bogus.json")
        with open(bogus, "w") as f:
            f.write("{\"a\": 1}")
        proc = run_bench(["compare", bogus])
        self.assertEqual(proc.returncode, 2)
        self.assertIn("bogus.json", proc.stderr)

    def test_compare_refuses_damaged_fields_naming_file_and_field(self):
        with open(os.path.join(self.out, "results.json")) as f:
            good = json.load(f)
        cases = [
            (("summary", "requests"), -1, "summary.requests"),
            (("summary", "sent"), 1e300, "summary.sent"),
            (("summary", "succeeded"), "x", "summary.succeeded"),
            (("requests", 0, "ttft_s"), "x", "requests[0].ttft_s"),
            (("requests", 0, "ttft_s"), -5, "requests[0].ttft_s"),
            (("requests", 0, "ttft_s"), 1e308, "requests[0].ttft_s"),
        ]
        for path, value, field in cases:
            damaged = json.loads(json.dumps(good))
            target = damaged
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
            name = os.path.join(self.tmp, "damaged.json")
            with open(name, "w") as f:
                json.dump(damaged, f)
            proc = run_bench(["compare", name, "--out", os.path.join(self.tmp, "cmpd")])
            self.assertEqual(proc.returncode, 2, (field, proc.stdout, proc.stderr))
            self.assertIn("damaged.json: " + field, proc.stderr)
            self.assertEqual(proc.stdout, "")

    def test_an_unreachable_engine_metrics_url_is_a_warning_once(self):
        metrics = f"http://127.0.0.1:{closed_port()}/metrics"
        out = os.path.join(self.tmp, "nometrics")
        proc = run_bench(["--url", self.urls[0], "--engine-metrics", metrics, "--workload",
                          "unique", "--requests", "20", "--rate", "10",
                          "--workload-param", "max_tokens=4", "--no-plots", "--out", out])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
        self.assertEqual(len(warnings), 1, proc.stderr)  # a 2 s run scrapes 3 times or more
        self.assertIn(metrics, warnings[0])
        r = load_json(os.path.join(out, "results.json"))
        self.assertTrue(r["engines"][0]["last_error"])

    def test_multi_turn_sends_answers_back(self):
        out = os.path.join(self.tmp, "mt")
        proc = run_bench(["--url", self.urls[0], "--workload", "multi-turn", "--requests", "12",
                          "--rate", "50", "--concurrency", "4", "--no-plots", "--out", out,
                          "--workload-param", "answer_tokens=4",
                          "--workload-param", "think_time_mean_s=0.01"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        r = load_json(os.path.join(out, "results.json"))
        self.assertEqual(r["summary"]["failed"], 0, r["summary"]["errors"])
        later = [q for q in r["requests"] if q["turn"] > 0]
        self.assertTrue(later)
        self.assertTrue(any(q["cached_tokens"] > 0 for q in later))


class BenchResponsesTest(unittest.TestCase):
    """`bench --api responses` through a gateway in front of a 2-replica fleet: every support-bot
    request becomes a POST /v1/responses, answered, timed and counted like a chat request."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="warmroute-bench-responses-")
        cls.engine = EmulatorProcess(["--profile", "tiny", "--replicas", "2"], replicas=2)
        cls.engine.__enter__()
        try:
            cls.gateway = GatewayProcess({
                "listen": {"host": "127.0.0.1", "port": 0, "threads": 1},
                "backends": [{"name": f"r{r.index}", "url": f"http://{r.host}:{r.port}"}
                             for r in cls.engine.replicas],
                "observability": {"access_log": "off"},
            })
            cls.gateway.__enter__()
        except Exception:
            cls.engine.__exit__(None, None, None)
            raise
        cls.url = f"http://{cls.gateway.host}:{cls.gateway.port}"
        cls.metrics = []
        for r in cls.engine.replicas:
            cls.metrics += ["--engine-metrics", f"http://{r.host}:{r.port}/metrics"]

    @classmethod
    def tearDownClass(cls):
        cls.gateway.__exit__(None, None, None)
        cls.engine.__exit__(None, None, None)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_responses(self, name, *args):
        """Runs `bench --api responses` at the gateway; returns (process, results or None)."""
        out = os.path.join(self.tmp, name)
        proc = run_bench(["--url", self.url, "--api", "responses", "--no-plots", "--out", out,
                          *args])
        results = os.path.join(out, "results.json")
        return proc, load_json(results) if os.path.exists(results) else None

    def assert_all_answered(self, proc, r, count):
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIsNotNone(r, proc.stderr)
        self.assertEqual(r["config"]["api"], "responses")
        s = r["summary"]
        self.assertEqual(s["requests"], count)
        self.assertEqual(s["failed"], 0, s["errors"])
        self.assertEqual(s["succeeded"], count)
        for q in r["requests"]:
            self.assertEqual(q["status"], 200)
            self.assertTrue(q["usage_reported"], q)
            self.assertGreater(q["ttft_s"], 0)
            self.assertGreaterEqual(q["e2e_s"], q["ttft_s"])
            self.assertGreater(q["completion_tokens"], 0)
            self.assertTrue(q["backend"], "the gateway's x-warmroute-backend")

    def test_streamed_support_bot_reports_hit_rate_and_ttft(self):
        proc, r = self.run_responses(
            "stream", *self.metrics, "--workload", "support-bot",
            "--workload-param", "system_prompts=3", "--workload-param", "system_prompt_tokens=600",
            "--workload-param", "max_tokens=8", "--requests", "40", "--rate", "80", "--seed", "3")
        self.assert_all_answered(proc, r, 40)
        s = r["summary"]
        self.assertIn("TTFT p50 (ms)", proc.stdout)
        self.assertIn("token hit rate", proc.stdout)
        self.assertGreater(s["ttft_s"]["p50"], 0)
        self.assertGreater(s["itl_s"]["count"], 0, "the output_text deltas are timed")
        for q in r["requests"]:
            self.assertGreater(q["prompt_tokens"], 600)
        # 3 system prompts of 600 tokens over 40 requests, routed prefix-aware: most prompt tokens
        # are cached, by the answers' usage and by the engines' counters alike.
        self.assertGreater(s["token_hit_rate"], 0.3)
        self.assertIsNotNone(s["engine_hit_rate"])
        self.assertGreater(s["engine_hit_rate"], 0.3)
        self.assertEqual(s["backend_source"], "header")

    def test_whole_answers(self):
        proc, r = self.run_responses(
            "json", "--no-stream", "--workload", "support-bot",
            "--workload-param", "system_prompts=2", "--workload-param", "max_tokens=4",
            "--requests", "10", "--rate", "50")
        self.assert_all_answered(proc, r, 10)
        self.assertFalse(r["config"]["stream"])
        self.assertGreater(r["summary"]["cached_tokens"], 0)

    def test_multi_turn_sends_the_whole_history_back(self):
        proc, r = self.run_responses(
            "mt", "--workload", "multi-turn", "--requests", "12", "--rate", "50",
            "--concurrency", "4", "--workload-param", "answer_tokens=4",
            "--workload-param", "think_time_mean_s=0.01")
        self.assert_all_answered(proc, r, 12)
        later = [q for q in r["requests"] if q["turn"] > 0]
        self.assertTrue(later)
        # A later turn's prompt is the earlier turns with their answers: their blocks are cached.
        self.assertTrue(any(q["cached_tokens"] > 0 for q in later))


class BenchErrorsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="warmroute-bench-err-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_unreachable_url_exits_1_naming_it_and_writes_partial_results(self):
        url = f"http://127.0.0.1:{closed_port()}"
        out = os.path.join(self.tmp, "down")
        proc = run_bench(["--url", url, "--requests", "20", "--rate", "100", "--out", out],
                         timeout=30)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn(url, proc.stderr)
        r = load_json(os.path.join(out, "results.json"))
        self.assertTrue(r["interrupted"])
        self.assertGreaterEqual(r["summary"]["errors"].get("connect", 0), 1)
        self.assertIn(url, r["stop_reason"])

    def test_malformed_trace_exits_2_naming_file_and_line(self):
        trace = os.path.join(self.tmp, "bad.jsonl")
        with open(trace, "w") as f:
            f.write('{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [0]}\n')
            f.write("this is not json\n")
        proc = run_bench(["--url", "http://127.0.0.1:9", "--workload", f"trace:{trace}",
                          "--out", os.path.join(self.tmp, "t")])
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("bad.jsonl", proc.stderr)
        self.assertIn("2", proc.stderr)

    def test_bad_flags_exit_2(self):
        for args in (["--requests", "5"],  # no --url
                     ["--url", "ftp://x:1"],
                     ["--url", "http://127.0.0.1:9", "--rate", "0"],
                     ["--url", "http://127.0.0.1:9", "--workload", "nope"],
                     ["--url", "http://127.0.0.1:9", "--workload-param", "system_prompts"],
                     ["--url", "http://127.0.0.1:9", "--no-such-flag"]):
            proc = run_bench([*args, "--out", os.path.join(self.tmp, "f")], timeout=20)
            self.assertEqual(proc.returncode, 2, (args, proc.stderr))
            self.assertTrue(proc.stderr.strip(), args)

    def assert_refused(self, args, *says):
        proc = run_bench([*args], timeout=20)
        self.assertEqual(proc.returncode, 2, (args, proc.stderr))
        for text in says:
            self.assertIn(text, proc.stderr, args)
        self.assertNotIn("runtime error", proc.stderr)
        self.assertNotIn("bench: 0/", proc.stderr, "refused only after starting the run")

    def test_rates_and_timeouts_that_overflow_are_refused(self):
        url = ["--url", "http://127.0.0.1:9", "--out", os.path.join(self.tmp, "o")]
        self.assert_refused([*url, "--rate", "1e-12", "--requests", "3"], "--rate 1e-12",
                            "too low")
        self.assert_refused([*url, "--rate", "inf"], "--rate")
        for timeout in ("1e300", "inf", "1e16", "0", "nan"):
            self.assert_refused([*url, "--timeout-s", timeout], "--timeout-s", "86400")
        trace = os.path.join(self.tmp, "slow.jsonl")
        with open(trace, "w") as f:
            f.write('{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [0]}\n')
            f.write('{"timestamp": 5000, "input_length": 10, "output_length": 2, '
                    '"hash_ids": [0]}\n')
        self.assert_refused([*url, "--workload", f"trace:{trace}", "--trace-speed", "1e-300"],
                            "slow.jsonl:2:", "speed 1e-300")
        self.assert_refused([*url, "--workload", f"trace:{trace}", "--rate", "5"], "--rate",
                            "trace")
        self.assert_refused([*url, "--trace-speed", "2"], "--trace-speed", "trace")
        self.assert_refused([*url, "--trace-jitter-s", "2"], "--trace-jitter-s", "trace")

    def test_a_bad_api_exits_2_naming_the_flag(self):
        url = ["--url", "http://127.0.0.1:9", "--out", os.path.join(self.tmp, "o")]
        for value in ("nope", "", "messages", "Responses"):
            self.assert_refused([*url, "--api", value], "--api", f'got "{value}"',
                                "chat, completions or responses")

    def test_messages_name_the_flag(self):
        url = ["--url", "http://127.0.0.1:9", "--out", os.path.join(self.tmp, "o")]
        proc = run_bench([*url, "--tenants", "0"], timeout=20)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--tenants", proc.stderr)
        self.assertNotIn("num_tenants", proc.stderr)
        proc = run_bench([*url, "--requests", "99999999999999999999"], timeout=20)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--requests", proc.stderr)
        self.assertNotIn("9223372036854775807", proc.stderr)

    def test_unreadable_traces_say_why(self):
        url = ["--url", "http://127.0.0.1:9", "--out", os.path.join(self.tmp, "o")]
        missing = os.path.join(self.tmp, "missing.jsonl")
        self.assert_refused([*url, "--workload", f"trace:{missing}"], missing,
                            "No such file or directory")
        self.assert_refused([*url, "--workload", f"trace:{self.tmp}"], "Is a directory")
        self.assert_refused([*url, "--workload", "trace:/proc/self/status"],
                            "/proc/self/status:1: invalid JSON")

    def test_output_directory_is_checked_before_the_run(self):
        a_file = os.path.join(self.tmp, "a_file")
        with open(a_file, "w") as f:
            f.write("x")
        # An open port would be sent requests: a closed one is never reached if --out is checked
        # first, and would exit 1 (unreachable) otherwise.
        url = ["--url", f"http://127.0.0.1:{closed_port()}", "--requests", "2"]
        self.assert_refused([*url, "--out", a_file], "--out", a_file)
        self.assert_refused([*url, "--out", ""], "--out", "empty")

    def test_html_server_counts_bad_responses(self):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HtmlHandler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            out = os.path.join(self.tmp, "html")
            proc = run_bench(["--url", f"http://127.0.0.1:{server.server_address[1]}",
                              "--requests", "5", "--rate", "100", "--no-plots", "--out", out],
                             timeout=30)
        finally:
            server.shutdown()
            server.server_close()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        r = load_json(os.path.join(out, "results.json"))
        self.assertEqual(r["summary"]["errors"].get("bad_response"), 5, r["summary"])
        self.assertIn("text/html", r["requests"][0]["error"])


if __name__ == "__main__":
    unittest.main()
