// The tokenizers and chat templates of the configured models (GatewayConfig::models), loaded off
// the request path: when the gateway starts and when it reloads its config. Each model's
// directory holds a Hugging Face tokenizer.json (tokenize::HfTokenizer) and a
// tokenizer_config.json with its chat template and special tokens (jinja::ModelTemplate): what
// vLLM loads for the model, so the gateway computes the prompt's token ids as the engine does.
//
// Sharing. One directory is loaded once, however many models name it. A reload reads the files
// again and keeps the loaded tokenizer of a directory whose two files are byte for byte the same
// (compared by their XXH3-128 digest), and a model's whole entry (its parity state with it) when
// its files and block size are unchanged.
//
// Parity. Each model carries whether the parity self-test (parity_schedule.h) lets it use
// precise keys: true until a backend's /tokenize disagrees with the gateway's ids, true again
// once no backend disagrees.
//
// Errors: InvalidArgument "models[i] (NAME): DIR/tokenizer.json: <problem>" for a file that
// cannot be read or is not supported (HfTokenizer's and ModelTemplate's messages name the part):
// the gateway then refuses to start, and a reload keeps the running config.
//
// Thread-safety: immutable once loaded, except each model's parity flag (atomic); shared by every
// worker through ProxySettings and by the parity prober.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "common/wall_clock.h"
#include "core/template/model_template.h"
#include "core/tokenize/hf_tokenizer.h"
#include "gateway/config/config.h"

namespace warmroute::gateway {

// One directory's files, loaded.
struct TokenizerFiles {
  std::string dir;
  absl::uint128 digest = 0;  // of tokenizer.json's and tokenizer_config.json's bytes
  std::unique_ptr<const tokenize::HfTokenizer> tokenizer;
  std::unique_ptr<const jinja::ModelTemplate> chat_template;
};

// One configured model.
class ModelKeying {
 public:
  ModelKeying(ModelConfig config, std::shared_ptr<const TokenizerFiles> files)
      : config_(std::move(config)), files_(std::move(files)) {}

  const std::string& name() const { return config_.name; }
  int block_size() const { return config_.block_size; }
  const ModelConfig& config() const { return config_; }
  // Null for a model configured without a tokenizer.
  const TokenizerFiles* files() const { return files_.get(); }
  const std::shared_ptr<const TokenizerFiles>& shared_files() const { return files_; }

  // Whether the parity self-test lets the model use precise keys.
  bool parity_ok() const { return parity_ok_.load(std::memory_order_relaxed); }
  void set_parity_ok(bool ok) const { parity_ok_.store(ok, std::memory_order_relaxed); }

 private:
  ModelConfig config_;
  std::shared_ptr<const TokenizerFiles> files_;
  mutable std::atomic<bool> parity_ok_{true};
};

class ModelTokenizers {
 public:
  // Loads the files of `models` (REQUIRES: names unique, as the config guarantees), reusing what
  // `previous` (null at startup) loaded from the same bytes. `clock` dates the templates'
  // strftime_now; it must outlive the result.
  static absl::StatusOr<std::shared_ptr<const ModelTokenizers>> Load(
      const std::vector<ModelConfig>& models, const ModelTokenizers* previous,
      const WallClock& clock);

  // The model named `model`, or null when it is not configured.
  const ModelKeying* Find(std::string_view model) const;
  const std::vector<std::shared_ptr<const ModelKeying>>& models() const { return models_; }
  const WallClock& clock() const { return *clock_; }
  // How many directories are loaded (each once).
  size_t loaded_dirs() const { return loaded_dirs_; }

 private:
  explicit ModelTokenizers(const WallClock& clock) : clock_(&clock) {}

  const WallClock* clock_;
  std::vector<std::shared_ptr<const ModelKeying>> models_;
  absl::flat_hash_map<std::string, const ModelKeying*> by_name_;
  size_t loaded_dirs_ = 0;
};

}  // namespace warmroute::gateway
