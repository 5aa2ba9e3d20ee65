#!/usr/bin/env python3
"""Writes JSONL files of OpenAI chat requests with planted prefix-hygiene defects, for
`warmroute analyze` (docs/monitoring.md's walk-through, tests/integration/test_analyze.py).

  make_planted.py KIND [--requests N] [--seed S] > file.jsonl

KIND:
  clean         a support bot done right: the static instructions first, then the question
  timestamp     the system prompt opens with "Current time: <ISO timestamp>"
  greeting      the system prompt opens with "Hello <name>, welcome back."
  tools         the same tool definitions, serialised with their keys in a random order
  request-id    the system prompt opens with "Request id: <uuid>"
  whitespace    the same system prompt with stray whitespace that varies per request: 1 to 4
                spaces after its first sentence, 2 to 4 line breaks before the policies, trailing
                spaces after the last one (what the gateway's collapse_whitespace rule undoes)
  mixed         each request one of the five kinds above it (about a fifth clean)

Standard library only; the same arguments give the same file.
"""
import argparse
import json
import random
import sys
import uuid

NAMES = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Julia"]
TOPICS = ["refunds", "shipping", "warranty", "accounts", "invoices"]
POLICY = "".join(
    f"Policy {i}: when a customer asks about {TOPICS[i % len(TOPICS)]}, check the order "
    f"history first, quote the relevant section of the handbook, and never promise more than "
    f"the handbook allows; escalate anything unusual to a human agent.\n" for i in range(24))
INSTRUCTIONS = ("You are the support assistant of Acme Tools. Answer briefly and politely, "
                "in the customer's language.\n\n" + POLICY)
TOOLS = [
    {"type": "function", "function": {
        "name": "lookup_order", "description": "Find an order by its number.",
        "parameters": {"type": "object", "properties": {
            "order_id": {"type": "string", "description": "The order number."}},
            "required": ["order_id"]}}},
    {"type": "function", "function": {
        "name": "open_ticket", "description": "Open a ticket for a human agent.",
        "parameters": {"type": "object", "properties": {
            "summary": {"type": "string", "description": "What the customer needs."},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]}},
            "required": ["summary"]}}},
]


def shuffled(value, rng):
    """`value` with every object's members in a random order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


def request(kind, i, rng):
    name = NAMES[rng.randrange(len(NAMES))]
    question = (f"Hi, this is {name}. My order {rng.randrange(10**6, 10**7)} about "
                f"{TOPICS[i % len(TOPICS)]} has a problem: what can you do?")
    system = INSTRUCTIONS
    tools = TOOLS
    if kind == "timestamp":
        minute = (9 * 60 + i) % (24 * 60)
        system = f"Current time: 2026-03-14T{minute // 60:02d}:{minute % 60:02d}:{i % 60:02d}Z\n" + system
    elif kind == "greeting":
        system = f"Hello {name}, welcome back.\n" + system
    elif kind == "request-id":
        system = f"Request id: {uuid.UUID(int=rng.getrandbits(128))}\n" + system
    elif kind == "tools":
        tools = shuffled(TOOLS, rng)
    elif kind == "whitespace":
        intro, policy = INSTRUCTIONS.split("\n\n", 1)
        intro = intro.replace(". ", "." + " " * rng.randint(1, 4), 1)
        system = intro + "\n" * rng.randint(2, 4) + policy.rstrip("\n") + " " * rng.randint(0, 3)
    body = {"model": "acme-support", "max_tokens": 200, "tools": tools,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": question}]}
    body["timestamp"] = round(i * 0.5, 3)
    return body


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["clean", "timestamp", "greeting", "tools", "request-id",
                                         "whitespace", "mixed"])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    kinds = ["clean", "timestamp", "greeting", "tools", "request-id"]
    for i in range(args.requests):
        kind = args.kind if args.kind != "mixed" else kinds[rng.randrange(len(kinds))]
        sys.stdout.write(json.dumps(request(kind, i, rng), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
