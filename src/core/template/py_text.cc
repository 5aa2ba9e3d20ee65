#include "core/template/py_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/template/cat.h"

namespace warmroute::jinja {
namespace {

// Decodes the code point at text[i] of valid UTF-8, advancing i.
char32_t NextCodePoint(std::string_view text, size_t& i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 < 0xE0) {
    const char32_t c = ((b0 & 0x1F) << 6) | (byte(i + 1) & 0x3F);
    i += 2;
    return c;
  }
  if (b0 < 0xF0) {
    const char32_t c = ((b0 & 0x0F) << 12) | ((byte(i + 1) & 0x3F) << 6) | (byte(i + 2) & 0x3F);
    i += 3;
    return c;
  }
  const char32_t c = ((b0 & 0x07) << 18) | ((byte(i + 1) & 0x3F) << 12) |
                     ((byte(i + 2) & 0x3F) << 6) | (byte(i + 3) & 0x3F);
  i += 4;
  return c;
}

// Python's str.isprintable() for a code point past ASCII, for the categories a chat can
// plausibly hold: separators (Zs, Zl, Zp), format characters (Cf), C1 controls and private use
// are not printable. Unassigned code points are treated as printable.
bool IsPrintableNonAscii(char32_t c) {
  if (c < 0xA1 || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
      (c >= 0x205F && c <= 0x2064) || (c >= 0x2066 && c <= 0x206F) || c == 0x3000 || c == 0xFEFF ||
      (c >= 0xFFF9 && c <= 0xFFFB)) {
    return false;
  }
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E) {
    return false;
  }
  if ((c >= 0xE000 && c <= 0xF8FF) || c >= 0xF0000) return false;
  if (c == 0x110BD || (c >= 0x1D173 && c <= 0x1D17A) || (c >= 0xE0001 && c <= 0xE007F)) {
    return false;
  }
  return true;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const unsigned char b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    char32_t min;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2, min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3, min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4, min = 0x10000;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    }
    size_t j = i;
    const char32_t c = NextCodePoint(text, j);
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

std::vector<char32_t> DecodeUtf8(std::string_view text) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) out.push_back(NextCodePoint(text, i));
  return out;
}

void AppendUtf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string EncodeUtf8(const std::vector<char32_t>& code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t c : code_points) AppendUtf8(c, out);
  return out;
}

size_t CodePointCount(std::string_view text) {
  size_t count = 0;
  for (char ch : text) count += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return count;
}

bool IsPythonSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::string_view StripSpace(std::string_view text, bool left, bool right) {
  size_t begin = 0;
  size_t end = text.size();
  if (left) {
    while (begin < end) {
      size_t next = begin;
      if (!IsPythonSpace(NextCodePoint(text, next))) break;
      begin = next;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      size_t probe = start;
      if (!IsPythonSpace(NextCodePoint(text, probe))) break;
      end = start;
    }
  }
  return text.substr(begin, end - begin);
}

std::string StripChars(std::string_view text, std::string_view chars, bool left, bool right) {
  const std::vector<char32_t> set = DecodeUtf8(chars);
  const auto in_set = [&set](char32_t c) {
    for (char32_t s : set) {
      if (s == c) return true;
    }
    return false;
  };
  std::vector<char32_t> cps = DecodeUtf8(text);
  size_t begin = 0;
  size_t end = cps.size();
  if (left) {
    while (begin < end && in_set(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && in_set(cps[end - 1])) --end;
  }
  return EncodeUtf8(std::vector<char32_t>(cps.begin() + begin, cps.begin() + end));
}

std::vector<std::string> SplitSpace(std::string_view text, int64_t max_split) {
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    // Skip whitespace.
    size_t next = i;
    while (i < n) {
      next = i;
      if (!IsPythonSpace(NextCodePoint(text, next))) break;
      i = next;
    }
    if (i >= n) break;
    if (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split) {
      // The rest, with its trailing whitespace stripped, is the last piece.
      out.emplace_back(StripSpace(text.substr(i), false, true));
      return out;
    }
    const size_t start = i;
    while (i < n) {
      next = i;
      if (IsPythonSpace(NextCodePoint(text, next))) break;
      i = next;
    }
    out.emplace_back(text.substr(start, i - start));
  }
  return out;
}

std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& ch : out) {
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  return out;
}

std::string AsciiUpper(std::string_view text) {
  std::string out(text);
  for (char& ch : out) {
    if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
  }
  return out;
}

std::string PythonFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // The shortest round-trip digits, in scientific form: [-]d[.ddd]e[+-]X.
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string_view sci(buf, result.ptr - buf);
  std::string out;
  if (!sci.empty() && sci[0] == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (char ch : sci.substr(0, e)) {
    if (ch != '.') digits.push_back(ch);
  }
  const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  if (exponent >= -4 && exponent < 16) {
    const int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
      out.append("0.");
      out.append(static_cast<size_t>(-point), '0');
      out.append(digits);
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out.append(digits);
      out.append(static_cast<size_t>(point) - digits.size(), '0');
      out.append(".0");
    } else {
      out.append(digits, 0, static_cast<size_t>(point));
      out.push_back('.');
      out.append(digits, static_cast<size_t>(point), std::string::npos);
    }
    return out;
  }
  out.push_back(digits[0]);
  if (digits.size() > 1) {
    out.push_back('.');
    out.append(digits, 1, std::string::npos);
  }
  char exp[16];
  std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  out.append(exp);
  return out;
}

std::string PythonStringRepr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back(quote);
  for (size_t i = 0; i < text.size();) {
    const char32_t c = NextCodePoint(text, i);
    char buf[16];
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out.append("\\t");
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      out.append(buf);
    } else if (c < 0x80 || IsPrintableNonAscii(c)) {
      AppendUtf8(c, out);
    } else if (c < 0x100) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      out.append(buf);
    } else if (c < 0x10000) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out.append(buf);
    } else {
      std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(c));
      out.append(buf);
    }
  }
  out.push_back(quote);
  return out;
}

}  // namespace warmroute::jinja
