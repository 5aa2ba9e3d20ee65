#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/) and dictionaries
(tests/fuzz/dict/) from examples of what each parser reads: the shapes the unit and integration
tests use, the shipped configs under deploy/, vLLM's KV-event encodings (python3-msgpack).
The outputs are checked in (beside them, finding-* files: inputs that found a bug); run this
again after changing it:

    /usr/bin/python3 tests/fuzz/make_seeds.py
"""
import json
import os
import struct

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def write_corpus(target, seeds):
    """Replaces the target's seed-* files; finding-* files (inputs that found a bug, kept as
    regression seeds) stay."""
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name.startswith("seed-"):
            os.remove(os.path.join(directory, name))
    for i, seed in enumerate(seeds):
        if isinstance(seed, str):
            seed = seed.encode()
        with open(os.path.join(directory, f"seed-{i:03d}"), "wb") as f:
            f.write(seed)


def write_dict(name, words):
    os.makedirs(os.path.join(HERE, "dict"), exist_ok=True)
    with open(os.path.join(HERE, "dict", name + ".dict"), "w") as f:
        f.write("# libFuzzer dictionary, written by tests/fuzz/make_seeds.py\n")
        for word in words:
            if isinstance(word, str):
                word = word.encode()
            escaped = "".join(chr(b) if 0x20 <= b < 0x7f and b not in (0x22, 0x5c) else f"\\x{b:02x}"
                              for b in word)
            f.write(f'"{escaped}"\n')


# --- HTTP/1 ---------------------------------------------------------------------------------
CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Hi"}]})
HTTP_REQUESTS = [
    "GET /health HTTP/1.1\r\nHost: gw\r\n\r\n",
    f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
    f"Authorization: Bearer sk-1\r\nContent-Length: {len(CHAT)}\r\n\r\n{CHAT}",
    "POST /v1/completions HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5;ext=1\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\nX-Trailer: t\r\n\r\n",
    "GET /v1/models HTTP/1.1\r\nHost: a\r\n\r\nGET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    "POST /v1/responses HTTP/1.1\r\nHost: gw\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
    "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    "POST /x HTTP/1.1\r\nHost: gw\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    "POST /x HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "GET /admin/backends/r1?drain=1 HTTP/1.1\r\nHost: gw\r\nX-Warmroute-Tenant: acme\r\n\r\n",
]
write_corpus("http_request", [bytes([i * 7 % 64]) + r.encode() for i, r in enumerate(HTTP_REQUESTS)])
HTTP_WORDS = ["GET", "POST", "HEAD", "HTTP/1.1", "HTTP/1.0", "\r\n", "\r\n\r\n", "Host: ",
              "Content-Length: ", "Transfer-Encoding: ", "chunked", "Connection: ", "close",
              "keep-alive", "Expect: 100-continue", ";ext=", "0\r\n\r\n", "ffffffffffffffff",
              "Content-Type: ", "text/event-stream", "application/json", ": ", "\t", " "]
write_dict("http_request", HTTP_WORDS)

SSE_CHAT = ('data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
            'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,'
            '"prompt_tokens_details":{"cached_tokens":8}}}\n\n'
            'data: [DONE]\n\n')
HTTP_RESPONSES = [
    f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(CHAT)}\r\n\r\n{CHAT}",
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    f"{len(SSE_CHAT):x}\r\n{SSE_CHAT}\r\n0\r\n\r\n",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the close",
    "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 5\r\n\r\nbusy!",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b\r\nabc\r\n0\r\nTrailer: x\r\n\r\n",
]
write_corpus("http_response", [bytes([i * 37 % 256, i]) + r.encode() for i, r in enumerate(HTTP_RESPONSES)])
write_dict("http_response", HTTP_WORDS + ["HTTP/1.1 200 OK", "HTTP/1.1 100 Continue", "304"])

SSE_RESPONSES = ('event: response.created\ndata: {"type":"response.created","response":{"id":"r1"}}\n\n'
                 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Hi"}\n\n'
                 'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r1",'
                 '"usage":{"input_tokens":20,"output_tokens":2,"input_tokens_details":{"cached_tokens":16}}}}\n\n')
SSE_MESSAGES = ('event: message_start\ndata: {"type":"message_start","message":{"id":"m1","usage":'
                '{"input_tokens":4,"cache_read_input_tokens":16,"cache_creation_input_tokens":0,"output_tokens":1}}}\n\n'
                'event: ping\ndata: {"type":"ping"}\n\n'
                'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"}}\n\n'
                'event: message_stop\ndata: {"type":"message_stop"}\n\n')
write_corpus("sse_usage", [
    b"\x00" + SSE_CHAT.encode(), b"\x03" + SSE_CHAT.replace("\n", "\r\n").encode(),
    b"\x01" + SSE_RESPONSES.encode(), b"\x02" + SSE_MESSAGES.encode(),
    b"\x06" + b": keep-alive\n\ndata: {\"usage\":{\"prompt_tokens\":99999999999}}\n\n",
    b"\x00" + CHAT.encode(),
])
write_dict("sse_usage", ["data: ", "event: ", "\n\n", "\r\n", "[DONE]", "\"usage\":", "\"prompt_tokens\":",
                         "\"cached_tokens\":", "\"prompt_tokens_details\":", "\"input_tokens\":",
                         "\"cache_read_input_tokens\":", "response.completed", "message_start", "{}", "null"])

# --- OpenAI request bodies ------------------------------------------------------------------
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
BODIES = [  # (endpoint: 0 completions, 1 chat, 2 responses, 3 messages), body
    (1, {"model": "m", "messages": [{"role": "system", "content": "You are terse."},
                                    {"role": "user", "content": "Hi"}], "stream": True}),
    (1, {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                 {"type": "text", "text": "b"}]}],
         "tools": TOOLS, "cache_salt": "client", "stream_options": {"include_usage": False}}),
    (1, {"model": "m", "messages": [{"role": "user", "content": "weather?"},
                                    {"role": "assistant", "content": None, "tool_calls": [
                                        {"id": "c1", "type": "function",
                                         "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
                                    {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]}),
    (0, {"model": "m", "prompt": "Once upon a time", "max_tokens": 8, "stream": True}),
    (0, {"model": "m", "prompt": [1, 2, 3, 4, 5], "cache_salt": "x"}),
    (2, {"model": "m", "input": "Hello", "instructions": "Be brief", "stream": True}),
    (2, {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
         "previous_response_id": "resp_1"}),
    (3, {"model": "m", "system": "sys", "max_tokens": 16,
         "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]}),
]
request_seeds = [bytes([e]) + json.dumps(b).encode() for e, b in BODIES]
request_seeds.append(b"\x01" + b'{"model":"m","cache\\u005fsalt":"c","cache_salt":"d","messages":[{"role":"user","content":"x"}]}')
request_seeds.append(b"\x05" + json.dumps(BODIES[0][1]).encode())  # chat, with response ids
write_corpus("openai_request", request_seeds)
write_corpus("cache_salt", request_seeds)
write_corpus("request_key", request_seeds + [b"\x81" + json.dumps(BODIES[0][1]).encode()])
PLANTED = [  # what the normalisation rules rewrite (workloads/requests/make_planted.py's defects)
    (1, {"model": "m", "messages": [
        {"role": "system", "content": "Current time: 2026-03-14T09:00:00Z\nYou are   a helpful\t\tagent.  \n\n\n\nBe brief."},
        {"role": "user", "content": "What can you do?"}], "tools": TOOLS}),
    (1, {"model": "m", "messages": [
        {"role": "developer", "content": [{"type": "text", "text": "Request-ID: 42\n  keep   indentation"}]},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}]}],
         "functions": [{"parameters": {"b": 1, "a": 2}, "name": "f"}]}),
    (2, {"model": "m", "instructions": "Current time: now\nRules.", "input": "Hi"}),
    (2, {"model": "m", "input": [{"role": "system", "content": "Current time: x"},
                                 {"role": "user", "content": [{"type": "input_text", "text": "q"}]}]}),
    (3, {"model": "m", "system": [{"type": "text", "text": "Current time: t\n\n\n\nsys"}],
         "messages": [{"role": "user", "content": "Hi"}], "tools": [{"name": "t", "input_schema": {"z": 1, "a": 0}}]}),
]
write_corpus("normalize", request_seeds + [bytes([e]) + json.dumps(b).encode() for e, b in PLANTED])
JSON_WORDS = ["\"model\":", "\"messages\":", "\"role\":", "\"content\":", "\"system\"", "\"user\"",
              "\"assistant\"", "\"tool\"", "\"tools\":", "\"tool_calls\":", "\"cache_salt\":",
              "\"cache\\u005fsalt\"", "\"stream\":true", "\"stream_options\":", "\"include_usage\":",
              "\"prompt\":", "\"input\":", "\"instructions\":", "\"type\":", "\"text\":",
              "\"request_id\":", "\"chat_template\":", "\"add_special_tokens\":", "\"max_tokens\":",
              "null", "true", "false", "{}", "[]", "\\u0000", "\\ud800", "1e999", "-0"]
for target in ("openai_request", "cache_salt", "request_key", "normalize", "admin_backend"):
    write_dict(target, JSON_WORDS + ["\"name\":", "\"url\":", "\"kind\":", "\"weight\":"])

# --- config and admin -----------------------------------------------------------------------
configs = []
for dirpath, _, files in sorted(os.walk(os.path.join(ROOT, "deploy"))):
    for name in sorted(files):
        if name.endswith(".yaml") and "prometheus" not in dirpath and "kubernetes" not in dirpath:
            with open(os.path.join(dirpath, name), "rb") as f:
                configs.append(f.read())
configs.append(b"listen: {port: 8080}\nbackends:\n  - {name: r1, url: 'http://127.0.0.1:8001'}\n")
configs.append(b"backends: &b [*b]\n")
write_corpus("config_yaml", configs)
write_dict("config_yaml", ["listen:", "backends:", "policy:", "name:", "url:", "kind:", "tenants:",
                           "prefix_key:", "mode:", "models:", "tokenizer:", "block_size:", "rate_limits:",
                           "discovery:", "prewarm:", "observability:", "kv_events:", "timeouts:",
                           "retries:", "tls:", "admin:", "- ", ": ", "{", "}", "[", "]", "&a", "*a",
                           "!!str", "---", "\n  ", "http://", "https://", "vllm", "sglang"])
write_corpus("admin_backend", [
    b'{"name":"r3","url":"http://127.0.0.1:8003"}',
    b'{"name":"r4","url":"https://10.0.0.4:8000","kind":"sglang","weight":2}',
    b'{"name":"r5","url":"http://[::1]:8005/v1","kind":"vllm","kv_events":{"endpoint":"tcp://127.0.0.1:5557","replay":"tcp://127.0.0.1:5558","topic":"kv"}}',
    b'{"url":"http://h:1"}', b'[]',
])

# --- Redis, Prometheus, DNS -----------------------------------------------------------------
write_corpus("resp", [b"+OK\r\n", b"-NOSCRIPT No matching script\r\n", b":42\r\n", b"$3\r\nfoo\r\n",
                      b"$-1\r\n", b"*-1\r\n", b"*2\r\n:1\r\n*2\r\n$1\r\na\r\n:-7\r\n",
                      b"*3\r\n:1\r\n:9\r\n$5\r\nhello\r\n+OK\r\n:5\r\n"])
write_dict("resp", ["+", "-", ":", "$", "*", "\r\n", "-1", "OK", "ERR", "9223372036854775808"])
METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 1.0
vllm:num_requests_waiting{engine="0",model_name="m"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 4096.0
vllm:time_to_first_token_seconds_bucket{le="0.01",model_name="m"} 3
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 7
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.42
label_escapes{a="x\\"y\\\\z\\n"} NaN
no_labels +Inf 1700000000000
"""
write_corpus("prometheus_text", [METRICS, "sglang:num_running_reqs{model_name=\"m\"} 2\n", "x 1\n# EOF\n"])
write_dict("prometheus_text", ["# HELP ", "# TYPE ", "{", "}", "=\"", "\",", "\\\"", "\\n", "NaN", "+Inf",
                               "-Inf", "1e-3", "vllm:", "_total", "_bucket", "le=\"", "model_name"])


def dns_name(name):
    return b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00"


def dns_answer(qname, qtype, answers, rcode=0, extra=b""):
    header = struct.pack(">HHHHHH", 0x1234, 0x8180 | rcode, 1, len(answers), 0, 0)
    question = dns_name(qname) + struct.pack(">HH", qtype, 1)
    body = b""
    for rtype, rdata in answers:
        body += b"\xc0\x0c" + struct.pack(">HHIH", rtype, 1, 30, len(rdata)) + rdata
    return header + question + body + extra


srv = struct.pack(">HHH", 10, 5, 8000) + dns_name("r1.vllm.svc")
write_corpus("dns_message", [
    dns_answer("vllm.svc.cluster.local", 1, [(1, bytes([10, 0, 0, 5])), (1, bytes([10, 0, 0, 6]))]),
    dns_answer("vllm.svc", 28, [(28, bytes(15) + b"\x05")]),
    dns_answer("_http._tcp.vllm.svc", 33, [(33, srv)]),
    dns_answer("alias.svc", 1, [(5, b"\xc0\x0c")]),  # a CNAME pointing at itself
    dns_answer("gone.svc", 1, [], rcode=3),
    dns_answer("vllm.svc", 1, [(1, bytes([10, 0, 0, 7]))])[:-3],  # truncated
])
write_dict("dns_message", [b"\xc0\x0c", b"\xc0", b"\x00\x01", b"\x00\x1c", b"\x00\x21", b"\x00\x05",
                           b"\x00\x29", b"\x00\x00\x00\x1e", b"\x03svc\x00"])

# --- KV events ------------------------------------------------------------------------------
def record(op, payload):
    return bytes([op]) + struct.pack("<H", len(payload)) + payload


tokens = list(range(1000, 1032))
stored_array = ["BlockStored", [501, 502], None, tokens, 16, None, "GPU"]
stored_map = {"type": "BlockStored", "block_hashes": [b"\x00" * 24 + b"\x01\x02\x03\x04\x05\x06\x07\x08"],
              "parent_block_hash": None, "token_ids": tokens[:16], "block_size": 16,
              "lora_id": None, "medium": "CPU", "extra_keys": [["salt-1"]]}
removed = ["BlockRemoved", [501], "GPU"]
cleared = ["AllBlocksCleared"]
batch_array = msgpack.packb([1700000000.5, [stored_array, removed], 0])
batch_map = msgpack.packb({"ts": 1700000001.0, "events": [stored_map, {"type": "AllBlocksCleared"}],
                           "data_parallel_rank": 1})
batch_sglang = msgpack.packb([1700000002.0, [["BlockStored", [-5, -6], None, tokens, 16, None],
                                            ["BlockStored", [7], -6, tokens[:16], 16, None, "CPU_PINNED",
                                             {"cache_salt": "t"}]]])
batch_cleared = msgpack.packb([1700000003.0, [cleared]])
seq_frame = struct.pack(">Q", 3)
write_corpus("kv_events", [
    record(0, batch_array) + record(0, batch_array) + record(4 * 1 + 6 * 0, b""),
    record(6, batch_map) + record(5, b""),
    record(1, batch_sglang) + record(2, batch_array) + record(0, batch_cleared),
    record(3, b"kv\x00" + seq_frame + b"\x00" + batch_array),
    record(0, batch_array) + record(1 + 6 * 5, batch_array) + record(28, b"") + record(2, batch_array),
])
write_dict("kv_events", [b"BlockStored", b"BlockRemoved", b"AllBlocksCleared", b"\xa4type", b"\xc0",
                         b"\x93", b"\x92", b"\xcb", b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff", b"\x10"])

# --- tokenizer ------------------------------------------------------------------------------
write_corpus("tokenizer", [
    "Hello, world! How are you doing today?",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n",
    "你好，世界。こんにちは 🌍🚀 naïve café\u00a0\u200b",
    "    def f(x):\n\treturn x ** 2  # 123456789\n\n\n",
    b"\xff\xfe invalid \xc3\x28 utf-8 \xed\xa0\x80",
    "<think>\n\n</think>\n\n<tool_call>{\"name\": \"f\"}</tool_call>",
])
write_dict("tokenizer", ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
                         "<tool_call>", "\n", " ", "'s", "'ll", "123", "\u00a0", "\u3000", "🌍", b"\xc3", b"\xf0\x9f"])
