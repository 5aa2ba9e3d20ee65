"""`warmroute engine` GET /metrics: vLLM V1's metric names and labels, valid exposition text
(promtool), and values that agree with what the responses reported.
"""
import re
import subprocess
import time
import unittest

from emulator_process import EmulatorProcess

KV_CAPACITY_TOKENS = 8192
BLOCK_SIZE = 16

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text):
    """[(name, {label: value}, float)] for every sample line; comments skipped."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise AssertionError(f"not a sample line: {line!r}")
        labels = dict(_LABEL.findall(m.group(2) or ""))
        samples.append((m.group(1), labels, float(m.group(3))))
    return samples


def value(samples, name, **labels):
    """The value of the one sample named `name` whose labels include `labels`."""
    found = [v for n, ls, v in samples if n == name and all(ls.get(k) == w for k, w in labels.items())]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} samples of {name} with {labels}")
    return found[0]


def promtool_check(text):
    """(exit code, output) of `promtool check metrics` on `text`."""
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=60)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


class MetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.engine = EmulatorProcess(
            ["--profile", "tiny", "--kv-capacity-tokens", str(KV_CAPACITY_TOKENS)])
        cls.engine.__enter__()
        cls.replica = cls.engine.replicas[0]
        cls.model = cls.replica.model()
        system = "You are a patient tutor. " * 30  # many blocks shared by the repeated prompt
        prompts = [
            (system, "Explain photosynthesis."),
            (system, "Explain photosynthesis."),  # the repeat: served from the prefix cache
            (None, "List three prime numbers."),
            (system, "Explain osmosis."),  # shares the system prompt's blocks
        ]
        cls.responses = [cls.replica.chat(cls.model, content, max_tokens=6, system=s)
                         for s, content in prompts]
        cls.prompt_tokens = sum(r["usage"]["prompt_tokens"] for r in cls.responses)
        cls.completion_tokens = sum(r["usage"]["completion_tokens"] for r in cls.responses)
        cls.cached_tokens = sum(
            ((r["usage"].get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
            for r in cls.responses)
        # The engine updates its metrics after each step; the last step may finish just after
        # the last response went out.
        deadline = time.monotonic() + 10
        while True:
            cls.text = cls.replica.metrics_text()
            cls.samples = parse_exposition(cls.text)
            try:
                generated = value(cls.samples, "vllm:generation_tokens_total")
            except AssertionError:
                generated = -1
            if generated >= cls.completion_tokens or time.monotonic() > deadline:
                break
            time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        cls.engine.__exit__(None, None, None)

    def test_promtool_accepts_the_exposition(self):
        code, output = promtool_check(self.text)
        # promtool 2.42 lints every name with a colon (colons are meant for recording rules) and
        # exits 3 on lint problems; vLLM's own names all have one, and real vLLM gets the same.
        # Any other problem, or a parse error (exit 1), fails.
        self.assertIn(code, (0, 3), output)
        for line in output.splitlines():
            self.assertTrue(line.endswith("metric names should not contain ':'"), line)
        # Without the colons nothing else may be reported: _total counters, HELP everywhere,
        # base units.
        code, output = promtool_check(self.text.replace("vllm:", "vllm_"))
        self.assertEqual(code, 0, output)
        self.assertEqual(output, "")

    def test_every_vllm_metric_has_model_and_engine_labels(self):
        labels = {"model_name": self.model, "engine": "0"}
        for name in ["vllm:num_requests_running", "vllm:num_requests_waiting",
                     "vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total",
                     "vllm:prefix_cache_hits_total", "vllm:prompt_tokens_total",
                     "vllm:generation_tokens_total", "vllm:num_preemptions_total",
                     "vllm:time_to_first_token_seconds_count",
                     "vllm:inter_token_latency_seconds_count",
                     "vllm:e2e_request_latency_seconds_count"]:
            value(self.samples, name, **labels)
        for name, kind in [("vllm:prompt_tokens_total", "counter"),
                           ("vllm:prefix_cache_hits_total", "counter"),
                           ("vllm:kv_cache_usage_perc", "gauge"),
                           ("vllm:time_to_first_token_seconds", "histogram")]:
            self.assertIn(f"# TYPE {name} {kind}\n", self.text)

    def test_token_counters_match_the_responses_usage(self):
        self.assertEqual(value(self.samples, "vllm:prompt_tokens_total"), self.prompt_tokens)
        self.assertEqual(value(self.samples, "vllm:generation_tokens_total"),
                         self.completion_tokens)

    def test_prefix_cache_counters_see_the_repeat(self):
        hits = value(self.samples, "vllm:prefix_cache_hits_total")
        queries = value(self.samples, "vllm:prefix_cache_queries_total")
        self.assertGreater(hits, 0)
        self.assertLessEqual(hits, queries)
        self.assertLessEqual(queries, self.prompt_tokens)
        # Every cached token a response reported was a prefix-cache hit.
        self.assertGreater(self.cached_tokens, 0, "the repeat reports cached_tokens")
        self.assertEqual(hits, self.cached_tokens)

    def test_latency_histograms_count_every_request(self):
        n = len(self.responses)
        self.assertEqual(value(self.samples, "vllm:time_to_first_token_seconds_count"), n)
        self.assertEqual(value(self.samples, "vllm:e2e_request_latency_seconds_count"), n)
        self.assertEqual(value(self.samples, "vllm:time_to_first_token_seconds_bucket", le="+Inf"),
                         n)
        self.assertGreater(value(self.samples, "vllm:time_to_first_token_seconds_sum"), 0)
        # The emulator's own accuracy metric: one intended TTFT per request, never above what
        # the engine delivered (delivery can only be late), and close to it on an idle machine.
        intended = value(self.samples, "warmroute_emulator_intended_ttft_seconds_sum")
        measured = value(self.samples, "vllm:time_to_first_token_seconds_sum")
        self.assertEqual(value(self.samples, "warmroute_emulator_intended_ttft_seconds_count"), n)
        self.assertGreater(intended, 0)
        self.assertLessEqual(intended, measured * 1.0001)
        # vLLM's TTFT buckets, exactly.
        bounds = sorted(float(ls["le"]) for name, ls, _ in self.samples
                        if name == "vllm:time_to_first_token_seconds_bucket" and ls["le"] != "+Inf")
        self.assertEqual(bounds, [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                  0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0,
                                  2560.0])
        # Each request of max_tokens 6 has 5 inter-token gaps (fewer if it stopped early).
        itl = value(self.samples, "vllm:inter_token_latency_seconds_count")
        self.assertEqual(itl, self.completion_tokens - n)

    def test_cache_config_info_matches_the_flags(self):
        info = [ls for name, ls, v in self.samples if name == "vllm:cache_config_info" and v == 1]
        self.assertEqual(len(info), 1)
        self.assertEqual(info[0]["block_size"], str(BLOCK_SIZE))
        self.assertEqual(info[0]["num_gpu_blocks"], str(KV_CAPACITY_TOKENS // BLOCK_SIZE))
        self.assertEqual(info[0]["enable_prefix_caching"], "True")
        self.assertEqual(info[0]["engine"], "0")

    def test_gauges_are_idle_after_the_requests(self):
        self.assertEqual(value(self.samples, "vllm:num_requests_running"), 0)
        self.assertEqual(value(self.samples, "vllm:num_requests_waiting"), 0)
        usage = value(self.samples, "vllm:kv_cache_usage_perc")
        self.assertGreaterEqual(usage, 0)
        self.assertLessEqual(usage, 1)


if __name__ == "__main__":
    unittest.main()
