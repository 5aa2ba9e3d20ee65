#include "gateway/keys/model_tokenizers.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "xxhash.h"

namespace warmroute::gateway {
namespace {

constexpr size_t kMaxFileBytes = size_t{256} << 20;

// The bytes of `path`; the error names the file.
absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
  }
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0) {
    text.append(buffer, n);
    if (text.size() > kMaxFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than ", kMaxFileBytes >> 20, " MiB"));
    }
  }
  if (std::ferror(file.get())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
  }
  return text;
}

absl::uint128 DigestOf(std::string_view tokenizer, std::string_view config) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  const uint64_t size = tokenizer.size();
  XXH3_128bits_update(state, &size, sizeof(size));
  XXH3_128bits_update(state, tokenizer.data(), tokenizer.size());
  XXH3_128bits_update(state, config.data(), config.size());
  const XXH128_hash_t hash = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return absl::MakeUint128(hash.high64, hash.low64);
}

// The files of `dir`: `previous`'s when their bytes are the same, else loaded anew.
absl::StatusOr<std::shared_ptr<const TokenizerFiles>> LoadDir(
    const std::string& dir, const std::shared_ptr<const TokenizerFiles>& previous) {
  const std::string tokenizer_path = absl::StrCat(dir, "/tokenizer.json");
  const std::string config_path = absl::StrCat(dir, "/tokenizer_config.json");
  absl::StatusOr<std::string> tokenizer_json = ReadFile(tokenizer_path);
  if (!tokenizer_json.ok()) return tokenizer_json.status();
  absl::StatusOr<std::string> config_json = ReadFile(config_path);
  if (!config_json.ok()) return config_json.status();
  const absl::uint128 digest = DigestOf(*tokenizer_json, *config_json);
  if (previous != nullptr && previous->digest == digest) return previous;

  auto files = std::make_shared<TokenizerFiles>();
  files->dir = dir;
  files->digest = digest;
  absl::StatusOr<std::unique_ptr<tokenize::HfTokenizer>> tokenizer =
      tokenize::HfTokenizer::FromJson(*tokenizer_json, tokenize::HfTokenizer::Options());
  if (!tokenizer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(tokenizer_path, ": ", tokenizer.status().message()));
  }
  files->tokenizer = std::move(*tokenizer);
  absl::StatusOr<jinja::ModelTemplate> chat_template =
      jinja::ModelTemplate::FromTokenizerConfig(*config_json);
  if (!chat_template.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(config_path, ": ", chat_template.status().message()));
  }
  files->chat_template = std::make_unique<const jinja::ModelTemplate>(std::move(*chat_template));
  return files;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const ModelTokenizers>> ModelTokenizers::Load(
    const std::vector<ModelConfig>& models, const ModelTokenizers* previous,
    const WallClock& clock) {
  std::shared_ptr<ModelTokenizers> out(new ModelTokenizers(clock));
  // What `previous` loaded, by directory.
  absl::flat_hash_map<std::string, std::shared_ptr<const TokenizerFiles>> before;
  if (previous != nullptr) {
    for (const auto& model : previous->models_) {
      if (model->files() != nullptr) before[model->files()->dir] = model->shared_files();
    }
  }
  absl::flat_hash_map<std::string, std::shared_ptr<const TokenizerFiles>> loaded;
  for (size_t i = 0; i < models.size(); ++i) {
    const ModelConfig& config = models[i];
    std::shared_ptr<const TokenizerFiles> files;
    if (!config.tokenizer.empty()) {
      auto it = loaded.find(config.tokenizer);
      if (it != loaded.end()) {
        files = it->second;
      } else {
        auto was = before.find(config.tokenizer);
        absl::StatusOr<std::shared_ptr<const TokenizerFiles>> dir =
            LoadDir(config.tokenizer, was != before.end() ? was->second : nullptr);
        if (!dir.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("models[", i, "] (", config.name,
                                                         "): ", dir.status().message()));
        }
        files = std::move(*dir);
        loaded.emplace(config.tokenizer, files);
        ++out->loaded_dirs_;
      }
    }
    std::shared_ptr<const ModelKeying> model;
    if (const ModelKeying* kept = previous != nullptr ? previous->Find(config.name) : nullptr;
        kept != nullptr && kept->config() == config && kept->shared_files() == files) {
      for (const auto& m : previous->models_) {
        if (m.get() == kept) model = m;
      }
    } else {
      model = std::make_shared<const ModelKeying>(config, std::move(files));
    }
    out->by_name_[config.name] = model.get();
    out->models_.push_back(std::move(model));
  }
  return std::shared_ptr<const ModelTokenizers>(std::move(out));
}

const ModelKeying* ModelTokenizers::Find(std::string_view model) const {
  auto it = by_name_.find(AbslView(model));
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace warmroute::gateway
