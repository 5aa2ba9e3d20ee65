// The precise prefix key (gateway/keys/request_key.h) of a client's request for a model with
// Qwen 3's tokenizer and chat template: parse, render with the Jinja interpreter, encode, cut
// into blocks. Whatever the body, the key is made or falls back with a reason — never an error,
// a crash or a hang — and a precise key's blocks cover at most the prompt's tokens.
#include <memory>
#include <string>

#include "common/wall_clock.h"
#include "gateway/keys/request_key.h"
#include "request_input.h"

namespace {

using warmroute::gateway::ModelTokenizers;

const ModelTokenizers& Models() {
  static const warmroute::FixedWallClock clock(std::chrono::system_clock::from_time_t(1700000000));
  static const std::shared_ptr<const ModelTokenizers> models = [] {
    auto loaded = ModelTokenizers::Load(
        {{.name = "qwen", .tokenizer = std::string(WARMROUTE_TOKENIZE_TESTDATA) + "/qwen3",
          .block_size = 4}},
        nullptr, clock);
    if (!loaded.ok()) {
      std::fprintf(stderr, "fuzz target request_key: %s\n", loaded.status().ToString().c_str());
      std::abort();
    }
    return *loaded;
  }();
  return *models;
}

}  // namespace

WARMROUTE_FUZZ_TARGET(request_key) {
  const ModelTokenizers& models = Models();  // loaded on the first (untimed, empty) input
  warmroute::fuzz::RequestInput input = warmroute::fuzz::ReadRequestInput(data, size);
  absl::StatusOr<warmroute::request::InferenceRequest>& parsed = input.parsed;
  if (!parsed.ok()) return 0;
  const std::string& body = input.body;
  const uint8_t choice = input.choice;
  parsed->model = "qwen";  // every request is for the model with a tokenizer
  const warmroute::routing::PrefixKeyOptions options;
  const warmroute::gateway::RequestKey key =
      warmroute::gateway::MakeRequestKey(*parsed, {.body = body,
                                                   .tenant = "",
                                                   .precise_salt = choice & 0x80 ? "salt" : "",
                                                   .options = &options,
                                                   .mode = warmroute::gateway::PrefixKeyMode::kAuto,
                                                   .models = &models});
  FUZZ_CHECK(!key.reason.empty());
  if (key.precise) {
    FUZZ_CHECK(static_cast<int64_t>(key.key.block_hashes.size()) * 4 <= key.key.prompt_tokens);
  }
  return 0;
}
