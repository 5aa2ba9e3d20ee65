"""An engine stand-in that tokenizes as vLLM does, for the gateway's precise prefix keys: a real
HTTP/1.1 server on loopback (standard library) serving one model from a tokenizer directory
(tokenizer.json, tokenizer_config.json).

  POST /tokenize  vLLM's shape: {"model", "messages", "add_generation_prompt"} renders the chat
                  with the directory's chat template as transformers does (Jinja2's
                  ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loop controls,
                  tojson, raise_exception, strftime_now) and encodes it without special tokens;
                  {"model", "prompt"} encodes the text with them. -> {"tokens", "count"}.
                  The ids come from the Rust tokenizers library (@anush008/tokenizers, in
                  tests/tokenizers/node_modules), run by one node process per backend.
  POST /v1/chat/completions, /v1/completions  a one-word answer whose usage counts the
                  prompt's tokens (the same render and encode), naming the backend.
  GET /health, /v1/models

Usage:
  if not TokenizeBackend.available(): skip
  with TokenizeBackend("Qwen/Qwen3-8B", tokenizer_dir, name="t0") as b:
      ... backends: [{"url": b.url, "kind": "openai", "models": [b.model]}] ...
      b.tokenize_calls   # how many POST /tokenize it answered
"""
import datetime
import json
import os
import subprocess
import sys
import threading
from echo_backend import JsonHandler, LoopbackServer

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_MODULES = os.path.join(HERE, "..", "tokenizers", "node_modules")

_ENCODER_JS = r"""
const readline = require('readline');
const { Tokenizer } = require(process.argv[1] + '/@anush008/tokenizers');
const tokenizer = Tokenizer.fromFile(process.argv[2]);
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', async (line) => {
  const { text, special } = JSON.parse(line);
  const encoding = await tokenizer.encode(text, null, { addSpecialTokens: special });
  process.stdout.write(JSON.stringify(encoding.getIds()) + '\n');
});
"""


def _jinja_environment():
    """transformers' environment, as tests/templates/make_golden.py builds it, with
    strftime_now on the real clock (as the gateway's)."""
    sys.path.insert(0, os.path.join(HERE, "..", "templates"))
    import make_golden
    env = make_golden.environment()
    env.globals["strftime_now"] = lambda f: datetime.datetime.now().strftime(f)
    return env


class Encoder:
    """The Rust tokenizers library on one tokenizer.json, in a node process."""

    def __init__(self, tokenizer_json):
        self._proc = subprocess.Popen(["node", "-e", _ENCODER_JS, NODE_MODULES, tokenizer_json],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._lock = threading.Lock()
        self.encode("", False)  # loaded before the backend serves

    def encode(self, text, special):
        with self._lock:
            self._proc.stdin.write(json.dumps({"text": text, "special": special}) + "\n")
            self._proc.stdin.flush()
            return json.loads(self._proc.stdout.readline())

    def close(self):
        self._proc.stdin.close()
        self._proc.wait(timeout=5)
        self._proc.stdout.close()


class ChatRenderer:
    """A tokenizer_config.json's chat template, rendered as transformers renders it."""

    def __init__(self, tokenizer_config_path):
        with open(tokenizer_config_path) as f:
            config = json.load(f)
        self._template = _jinja_environment().from_string(config["chat_template"])
        self._special = {}
        for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                    "mask_token"):
            value = config.get(key)
            if isinstance(value, dict):
                value = value.get("content")
            if value is not None:
                self._special[key] = value
        if config.get("additional_special_tokens"):
            self._special["additional_special_tokens"] = config["additional_special_tokens"]

    def render(self, messages, add_generation_prompt=True):
        return self._template.render(messages=messages, tools=None, documents=None,
                                     add_generation_prompt=add_generation_prompt, **self._special)


def available():
    """Whether node, the Rust tokenizers package and Jinja2 are here."""
    try:
        import jinja2  # noqa: F401
    except ImportError:
        return False
    return (os.path.isdir(os.path.join(NODE_MODULES, "@anush008", "tokenizers")) and
            subprocess.run(["node", "--version"], capture_output=True).returncode == 0)


class TokenizeBackend(LoopbackServer):
    available = staticmethod(available)

    def __init__(self, model, tokenizer_dir, name="tok"):
        self.model = model
        self.name = name
        self.tokenize_calls = 0
        self.requests = []  # (path, body dict)
        self._lock = threading.Lock()
        self.encoder = Encoder(os.path.join(tokenizer_dir, "tokenizer.json"))
        self.renderer = ChatRenderer(os.path.join(tokenizer_dir, "tokenizer_config.json"))
        backend = self

        class Handler(JsonHandler):
            def do_GET(self):
                if not self.reply_health_or_models(backend.model):
                    self._reply(404, {"error": {"message": "not found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with backend._lock:
                    backend.requests.append((self.path, body))
                if self.path == "/tokenize":
                    backend.tokenize_calls += 1
                    ids = backend.ids_of(body)
                    self._reply(200, {"tokens": ids, "count": len(ids), "max_model_len": 40960})
                elif self.path in ("/v1/chat/completions", "/v1/completions"):
                    ids = backend.ids_of(body)
                    self._reply(200, {"id": "x", "object": "chat.completion",
                                      "model": backend.model, "backend": backend.name,
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant",
                                                               "content": "ok"}}],
                                      "usage": {"prompt_tokens": len(ids),
                                                "completion_tokens": 1,
                                                "total_tokens": len(ids) + 1}})
                else:
                    self._reply(404, {"error": {"message": "not found"}})

        self._listen(Handler)

    def ids_of(self, body):
        """The ids vLLM computes for a /tokenize, chat or completions body."""
        if "messages" in body:
            messages = [{"role": m["role"], "content": m["content"]} for m in body["messages"]]
            text = self.renderer.render(messages, body.get("add_generation_prompt", True))
            return self.encoder.encode(text, False)
        return self.encoder.encode(body["prompt"], True)

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.encoder.close()
        return False
