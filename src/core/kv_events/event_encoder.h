// Encodes an engine step's KV events (core/engine/kv_event.h) as the msgpack payload vLLM's (or
// SGLang's) publisher sends: frame 3 of a KV-event message. The emulator's publisher
// (emulator/kv_event_publisher.h) puts it on a ZMQ PUB socket; the simulator hands it to the
// router's event feed after a simulated network delay; event_decoder.h reads it back.
//
// Payload: [ts, [event, ...], data_parallel_rank] (the rank left out when unknown).
// Events are msgspec tagged structs (omit_defaults), block hashes msgpack unsigned ints (vLLM's
// int form of ExternalBlockHash), medium "GPU". Three encodings:
//   kArray: array_like, vLLM up to v0.23 — an array whose first element is the tag:
//     ["BlockStored", block_hashes, parent_block_hash|nil, token_ids, block_size, lora_id|nil,
//      medium, lora_name|nil]
//     ["BlockRemoved", block_hashes, medium]
//     ["AllBlocksCleared"]
//   kMap: vLLM's current form (vllm-project/vllm#42892) — {"type": tag, field: value, ...} with
//     the same fields plus, for BlockStored, extra_keys (nil per block), group_idx (0) and
//     kv_cache_spec_kind ("full_attention"), and for BlockRemoved group_idx (0).
//   kSglang: SGLang's copy of the schema (python/sglang/srt/disaggregation/kv_events.py),
//     array_like with fewer fields and the rank named attn_dp_rank:
//     ["BlockStored", block_hashes, parent_block_hash|nil, token_ids, block_size, lora_id|nil]
//     ["BlockRemoved", block_hashes]
//     ["AllBlocksCleared"]
//     Only the shape is SGLang's: hashes and blocks stay the engine model's (vLLM-style 16-token
//     blocks), where SGLang hashes its radix cache's pages.
// The outer batch is an array in all three.
//
// Thread-safety: a pure function.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "core/engine/kv_event.h"

namespace warmroute::kv_events {

enum class KvEventEncoding { kArray, kMap, kSglang };

// The msgpack payload of one batch (frame 3).
std::string EncodeKvEventBatch(double ts, std::span<const engine::KvEvent> events,
                               std::optional<int> data_parallel_rank, KvEventEncoding encoding);

}  // namespace warmroute::kv_events
