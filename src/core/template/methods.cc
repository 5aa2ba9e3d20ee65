// The methods of str, dict and list values a template may call (builtins.h), as CPython's.
#include <algorithm>

#include "common/status.h"
#include "core/template/builtins.h"
#include "core/template/cat.h"
#include "core/template/py_text.h"
#include "core/template/string_format.h"

namespace warmroute::jinja {
namespace {

absl::Status WrongArgs(std::string_view name) {
  return absl::InvalidArgumentError(Cat(name, "(): wrong arguments"));
}

// startswith / endswith: `affix` is a string or a tuple of strings.
absl::StatusOr<Value> Affix(std::string_view text, const CallArgs& args, bool prefix) {
  const Value* affix = args.Get(0, "prefix");
  if (affix == nullptr) return WrongArgs(prefix ? "startswith" : "endswith");
  std::vector<Value> options;
  if (affix->is_string()) {
    options.push_back(*affix);
  } else if (affix->is_tuple()) {
    options = affix->items();
  } else {
    return absl::InvalidArgumentError("startswith/endswith take a str or a tuple of str");
  }
  for (const Value& o : options) {
    if (!o.is_string()) return WrongArgs(prefix ? "startswith" : "endswith");
    const std::string& s = o.string_value();
    const bool hit = s.size() <= text.size() &&
                     (prefix ? text.compare(0, s.size(), s) == 0
                             : text.compare(text.size() - s.size(), s.size(), s) == 0);
    if (hit) return Value::Bool(true);
  }
  return Value::Bool(false);
}

absl::StatusOr<Value> Split(std::string_view text, const CallArgs& args, bool from_right) {
  const Value* sep = args.Get(0, "sep");
  const Value* max = args.Get(1, "maxsplit");
  const int64_t max_split = max != nullptr ? max->AsInt() : -1;
  std::vector<Value> out;
  if (sep == nullptr || sep->is_none()) {
    if (from_right && max_split >= 0) {
      return absl::InvalidArgumentError("rsplit() with maxsplit and no separator");
    }
    for (std::string& piece : SplitSpace(text, max_split)) {
      out.push_back(Value::String(std::move(piece)));
    }
    return Value::MakeList(std::move(out));
  }
  if (!sep->is_string()) return WrongArgs("split");
  const std::string& s = sep->string_value();
  if (s.empty()) return absl::InvalidArgumentError("empty separator");
  std::vector<std::string> pieces;
  if (!from_right) {
    size_t pos = 0;
    while (max_split < 0 || static_cast<int64_t>(pieces.size()) < max_split) {
      const size_t hit = text.find(s, pos);
      if (hit == std::string_view::npos) break;
      pieces.emplace_back(text.substr(pos, hit - pos));
      pos = hit + s.size();
    }
    pieces.emplace_back(text.substr(pos));
  } else {
    size_t end = text.size();
    while (max_split < 0 || static_cast<int64_t>(pieces.size()) < max_split) {
      if (end < s.size()) break;
      const size_t hit = text.rfind(s, end - s.size());
      if (hit == std::string_view::npos) break;
      pieces.emplace_back(text.substr(hit + s.size(), end - hit - s.size()));
      end = hit;
    }
    pieces.emplace_back(text.substr(0, end));
    std::reverse(pieces.begin(), pieces.end());
  }
  for (std::string& piece : pieces) out.push_back(Value::String(std::move(piece)));
  return Value::MakeList(std::move(out));
}

// str.title(): a letter after a letter is lowered, any other letter raised (code points past
// ASCII count as letters and are kept).
std::string Title(std::string_view text) {
  std::string out;
  bool prev_cased = false;
  for (char c : text) {
    const bool lower = c >= 'a' && c <= 'z';
    const bool upper = c >= 'A' && c <= 'Z';
    if (lower || upper) {
      out.push_back(prev_cased ? (upper ? static_cast<char>(c + 32) : c)
                               : (lower ? static_cast<char>(c - 32) : c));
      prev_cased = true;
    } else {
      out.push_back(c);
      prev_cased = static_cast<unsigned char>(c) >= 0x80;
    }
  }
  return out;
}

template <typename Pred>
Value All(std::string_view text, Pred pred) {
  if (text.empty()) return Value::Bool(false);
  return Value::Bool(std::all_of(text.begin(), text.end(), pred));
}

absl::StatusOr<Value> StringMethod(const std::string& text, std::string_view name,
                                   const CallArgs& args, const BuiltinEnv& env) {
  if (name == "startswith") return Affix(text, args, true);
  if (name == "endswith") return Affix(text, args, false);
  if (name == "split") return Split(text, args, false);
  if (name == "rsplit") return Split(text, args, true);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip";
    const bool right = name != "lstrip";
    const Value* chars = args.Get(0, "chars");
    if (chars != nullptr && !chars->is_none()) {
      if (!chars->is_string()) return WrongArgs(name);
      return Value::String(StripChars(text, chars->string_value(), left, right));
    }
    return Value::String(std::string(StripSpace(text, left, right)));
  }
  if (name == "lower") return Value::String(AsciiLower(text));
  if (name == "upper") return Value::String(AsciiUpper(text));
  if (name == "title") return Value::String(Title(text));
  if (name == "capitalize") {
    std::string out = AsciiLower(text);
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
    return Value::String(std::move(out));
  }
  if (name == "replace") {
    const Value* old_text = args.Get(0, "old");
    const Value* new_text = args.Get(1, "new");
    const Value* count = args.Get(2, "count");
    if (old_text == nullptr || new_text == nullptr || !old_text->is_string() ||
        !new_text->is_string()) {
      return WrongArgs(name);
    }
    return ReplaceText(text, old_text->string_value(), new_text->string_value(),
                       count != nullptr ? count->AsInt() : -1, env.max_string_bytes);
  }
  if (name == "format") return BraceFormat(text, args, env.max_string_bytes);
  if (name == "find" || name == "rfind" || name == "count") {
    const Value* sub = args.Get(0, "sub");
    if (sub == nullptr || !sub->is_string()) return WrongArgs(name);
    const std::string& s = sub->string_value();
    if (name == "count") {
      if (s.empty()) return Value::Int(static_cast<int64_t>(CodePointCount(text)) + 1);
      int64_t n = 0;
      for (size_t pos = text.find(s); pos != std::string::npos;
           pos = text.find(s, pos + s.size())) {
        ++n;
      }
      return Value::Int(n);
    }
    const size_t hit = name == "find" ? text.find(s) : text.rfind(s);
    if (hit == std::string::npos) return Value::Int(-1);
    return Value::Int(static_cast<int64_t>(CodePointCount(std::string_view(text).substr(0, hit))));
  }
  if (name == "join") {
    const Value* items = args.Get(0, "iterable");
    if (items == nullptr || !items->is_list()) return WrongArgs(name);
    std::string out;
    for (size_t i = 0; i < items->items().size(); ++i) {
      const Value& item = items->items()[i];
      if (!item.is_string()) {
        return absl::InvalidArgumentError(
            Cat("sequence item ", i, ": expected str instance, ", TypeName(item), " found"));
      }
      if (i > 0) out += text;
      out += item.string_value();
      if (out.size() > env.max_string_bytes) {
        return absl::ResourceExhaustedError("a string exceeds the output limit");
      }
    }
    return Value::String(std::move(out));
  }
  if (name == "splitlines") {
    std::vector<Value> lines;
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n' || text[i] == '\r') {
        lines.push_back(Value::String(text.substr(start, i - start)));
        if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < text.size()) lines.push_back(Value::String(text.substr(start)));
    return Value::MakeList(std::move(lines));
  }
  if (name == "isdigit") return All(text, [](char c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") {
    return All(text, [](char c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; });
  }
  if (name == "isalnum") {
    return All(text, [](char c) {
      return ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9');
    });
  }
  if (name == "isspace") {
    return Value::Bool(!text.empty() && StripSpace(text, true, true).empty());
  }
  if (name == "islower" || name == "isupper") {
    bool lower = false, upper = false;
    for (char c : text) {
      lower |= c >= 'a' && c <= 'z';
      upper |= c >= 'A' && c <= 'Z';
    }
    return Value::Bool(name == "islower" ? lower && !upper : upper && !lower);
  }
  return absl::InvalidArgumentError(Cat("'str' object has no attribute '", name, "'"));
}

}  // namespace

absl::StatusOr<Value> CallMethod(const Value& receiver, std::string_view name, const CallArgs& args,
                                 const BuiltinEnv& env) {
  if (receiver.is_string()) return StringMethod(receiver.string_value(), name, args, env);
  if (receiver.is_dict() && !receiver.is_namespace()) {
    const Dict& dict = receiver.dict();
    std::vector<Value> out;
    if (name == "keys" || name == "values" || name == "items") {
      for (const auto& [key, value] : dict.entries()) {
        if (name == "keys") {
          out.push_back(Value::String(key));
        } else if (name == "values") {
          out.push_back(value);
        } else {
          out.push_back(Value::MakeList({Value::String(key), value}, /*tuple=*/true));
        }
      }
      return Value::MakeList(std::move(out));
    }
    if (name == "get") {
      const Value* key = args.Get(0, "key");
      const Value* dflt = args.Get(1, "default");
      if (key == nullptr) return WrongArgs(name);
      if (key->is_string()) {
        if (const Value* v = dict.Find(key->string_value())) return *v;
      }
      return dflt != nullptr ? *dflt : Value::None();
    }
  }
  if (receiver.is_list() && (name == "index" || name == "count")) {
    const Value* x = args.Get(0, "value");
    if (x == nullptr) return WrongArgs(name);
    int64_t count = 0;
    for (size_t i = 0; i < receiver.items().size(); ++i) {
      if (!Equals(receiver.items()[i], *x)) continue;
      if (name == "index") return Value::Int(static_cast<int64_t>(i));
      ++count;
    }
    if (name == "index") return absl::InvalidArgumentError("list.index(x): x not in list");
    return Value::Int(count);
  }
  return absl::InvalidArgumentError(
      Cat("'", TypeName(receiver), "' object has no attribute '", name, "'"));
}

}  // namespace warmroute::jinja
