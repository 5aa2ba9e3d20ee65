#include "core/template/string_format.h"

#include <cstdio>

#include "core/template/cat.h"
#include "core/template/py_text.h"

namespace warmroute::jinja {
namespace {

absl::Status TooLong() { return absl::ResourceExhaustedError("a string exceeds the output limit"); }

}  // namespace

absl::StatusOr<Value> PercentFormat(std::string_view format, const CallArgs& args,
                                    size_t max_bytes) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out.push_back(format[i]);
      continue;
    }
    size_t j = i + 1;
    std::string spec = "%";
    while (j < format.size() &&
           std::string_view("-+ 0#").find(format[j]) != std::string_view::npos) {
      spec.push_back(format[j++]);
    }
    while (j < format.size() && ((format[j] >= '0' && format[j] <= '9') || format[j] == '.')) {
      spec.push_back(format[j++]);
    }
    if (j >= format.size()) return absl::InvalidArgumentError("incomplete format");
    const char conv = format[j];
    i = j;
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (next >= args.positional.size()) {
      return absl::InvalidArgumentError("not enough arguments for format string");
    }
    const Value& v = args.positional[next++];
    char buf[128];
    switch (conv) {
      case 's':
      case 'r': {
        const std::string text = conv == 's' ? ToStr(v) : Repr(v);
        if (spec == "%") {
          out += text;
        } else {
          std::snprintf(buf, sizeof(buf), (spec + "s").c_str(), text.c_str());
          out += buf;
        }
        break;
      }
      case 'd':
      case 'i':
      case 'x':
        if (!v.is_number()) return absl::InvalidArgumentError("%d format: a number is required");
        std::snprintf(buf, sizeof(buf), (spec + "ll" + (conv == 'x' ? 'x' : 'd')).c_str(),
                      static_cast<long long>(v.is_float() ? static_cast<int64_t>(v.float_value())
                                                          : v.AsInt()));
        out += buf;
        break;
      case 'f':
        if (!v.is_number()) return absl::InvalidArgumentError("%f format: a number is required");
        std::snprintf(buf, sizeof(buf), (spec + 'f').c_str(), v.AsDouble());
        out += buf;
        break;
      default:
        return absl::InvalidArgumentError(
            Cat("unsupported format character '", std::string(1, conv), "'"));
    }
    if (out.size() > max_bytes) return TooLong();
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> BraceFormat(std::string_view format, const CallArgs& args, size_t max_bytes) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') ++i;
      out.push_back('}');
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t end = format.find('}', i);
    if (end == std::string_view::npos) {
      return absl::InvalidArgumentError("Single '{' encountered in format string");
    }
    const std::string_view field = format.substr(i + 1, end - i - 1);
    i = end;
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
      ++auto_index;
    } else if (field.find_first_not_of("0123456789") == std::string_view::npos) {
      const size_t index = std::stoul(std::string(field));
      v = index < args.positional.size() ? &args.positional[index] : nullptr;
    } else if (field.find_first_of(".[!:") == std::string_view::npos) {
      for (const auto& [key, value] : args.keyword) {
        if (key == field) v = &value;
      }
    } else {
      return absl::InvalidArgumentError(Cat("unsupported format field '{", field, "}'"));
    }
    if (v == nullptr) {
      return absl::InvalidArgumentError(Cat("format: no argument for '{", field, "}'"));
    }
    out += ToStr(*v);
    if (out.size() > max_bytes) return TooLong();
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> ReplaceText(std::string_view text, std::string_view old_text,
                                  std::string_view new_text, int64_t count, size_t max_bytes) {
  std::string out;
  int64_t done = 0;
  if (old_text.empty()) {
    // Python inserts `new` before every code point and at the end.
    const std::vector<char32_t> cps = DecodeUtf8(text);
    for (char32_t c : cps) {
      if (count < 0 || done < count) {
        out += new_text;
        ++done;
      }
      AppendUtf8(c, out);
      if (out.size() > max_bytes) return TooLong();
    }
    if (count < 0 || done < count) out += new_text;
    return Value::String(std::move(out));
  }
  size_t pos = 0;
  while (count < 0 || done < count) {
    const size_t hit = text.find(old_text, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(new_text);
    pos = hit + old_text.size();
    ++done;
    if (out.size() > max_bytes) return TooLong();
  }
  out.append(text.substr(pos));
  if (out.size() > max_bytes) return TooLong();
  return Value::String(std::move(out));
}

}  // namespace warmroute::jinja
