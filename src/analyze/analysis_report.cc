#include "analyze/analysis_report.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_writer.h"

namespace warmroute::analyze {
namespace {

std::string Pct(double v) { return absl::StrFormat("%.1f%%", 100 * v); }

std::string Hex(uint64_t id) { return absl::StrFormat("%016x", id); }

// The verdict on the usual criterion: more than half the requests share a prefix.
std::string Verdict(const SharingStats& s) {
  if (s.sharing_share > 0.5) {
    return absl::StrCat(Pct(s.sharing_share),
                        " of the requests share a prefix with an earlier one (more than half: "
                        "prefix-aware routing has something to reuse)");
  }
  return absl::StrCat("only ", Pct(s.sharing_share),
                      " of the requests share a prefix with an earlier one (half or less: little "
                      "for prefix-aware routing to reuse as the prompts are)");
}

// `text` with newlines shown as ⏎ and tabs as spaces, for one-line display.
std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "⏎";
    } else if (c == '\t' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// The other request's lines, or what stands for their absence.
std::string OtherExample(const HygieneFinding& f) {
  return f.example_other.empty() ? "(none: that request lacks these lines)" : f.example_other;
}

}  // namespace

std::string TerminalReport(const AnalysisReport& r) {
  const SharingStats& s = r.sharing;
  std::string out = absl::StrCat("warmroute analyze: ", r.source, " (", r.set->format, ", ",
                                 s.requests, " requests, ", s.blocks, " blocks of ",
                                 r.set->block_tokens, " tokens)\n\n");
  absl::StrAppend(&out, "  ", Verdict(s), "\n");
  absl::StrAppend(&out, "  shared blocks per request, mean:        ", Pct(s.shared_fraction_mean),
                  "\n");
  absl::StrAppend(&out, "  hit rate with an unbounded cache:       ",
                  Pct(s.infinite_cache_hit_rate), "\n");
  absl::StrAppend(&out, "  prefix groups of 2 or more requests:    ", s.groups_total, "\n\n");
  if (!s.groups.empty()) {
    absl::StrAppend(&out, absl::StrFormat("  %-16s %9s %7s %9s %11s %12s %14s\n", "group",
                                          "requests", "share", "prefix", "shared/req",
                                          "reuse (s)", "reuse (reqs)"));
    for (const PrefixGroup& g : s.groups) {
      absl::StrAppend(
          &out, absl::StrFormat("  %-16s %9d %7s %9s %11.1f %12.1f %14.0f\n", Hex(g.id),
                                g.requests, Pct(g.share), absl::StrCat(g.prefix_tokens, " tok"),
                                g.shared_blocks_mean, g.reuse_distance_s,
                                g.reuse_distance_requests));
    }
    out += "\n";
  }
  if (r.set->format != "requests") {
    out += "  prefix hygiene: not available for a trace (no prompt text)\n";
  } else if (r.findings.empty()) {
    out += "  prefix hygiene: no early difference found in prompts that otherwise match\n";
  } else {
    absl::StrAppend(&out, "  prefix hygiene: ", r.findings.size(), " finding(s)\n");
  }
  for (const HygieneFinding& f : r.findings) {
    absl::StrAppend(&out, "\n  [", f.kind, "] ", f.what, "\n");
    absl::StrAppend(&out, "    ", f.requests, " requests (", Pct(f.share),
                    "); the span starts at character ", f.position_chars, " (median) and is ",
                    f.span_chars, " characters long; ",
                    absl::StrFormat("%.0f", f.blocked_chars_mean),
                    " matching characters after it are not reused\n");
    absl::StrAppend(&out, "    line ", f.example_line, ": ", OneLine(f.example), "\n");
    absl::StrAppend(&out, "    line ", f.example_other_line, ": ", OneLine(OtherExample(f)), "\n");
    absl::StrAppend(&out, "    change: ", f.advice, "\n");
    absl::StrAppend(&out, "    hit rate with an unbounded cache: ", Pct(f.hit_rate_now), " now, ",
                    Pct(f.hit_rate_fixed), " ", f.fixed_as, "\n");
  }
  if (r.fleet) {
    absl::StrAppend(&out, "\n  replayed on ", r.fleet->fleet,
                    " by the simulator, at the file's own timestamps:\n\n", r.fleet->table);
  }
  if (r.sizing) out += FormatSizing(*r.sizing);
  return out;
}

std::string MarkdownReport(const AnalysisReport& r) {
  const SharingStats& s = r.sharing;
  std::string out = absl::StrCat("# Prefix analysis of `", r.source, "`\n\n");
  absl::StrAppend(&out, s.requests, " requests (", r.set->format, "), ", s.blocks, " blocks of ",
                  r.set->block_tokens, " tokens. ", Verdict(s), ".\n\n");
  out += "| figure | value |\n|---|---|\n";
  absl::StrAppend(&out, "| requests sharing a prefix (", kMinSharedTokens,
                  " tokens or more) with an earlier one | ", Pct(s.sharing_share),
                  " |\n");
  absl::StrAppend(&out, "| shared blocks per request, mean | ", Pct(s.shared_fraction_mean),
                  " |\n");
  absl::StrAppend(&out, "| hit rate with an unbounded cache | ", Pct(s.infinite_cache_hit_rate),
                  " |\n");
  absl::StrAppend(&out, "| prefix groups of 2 or more requests | ", s.groups_total, " |\n\n");
  if (!s.groups.empty()) {
    out += "## The largest prefix groups\n\n";
    out +=
        "| group | requests | share | prefix | blocks shared per request | reuse distance (s) | "
        "reuse distance (requests) |\n|---|---|---|---|---|---|---|\n";
    for (const PrefixGroup& g : s.groups) {
      absl::StrAppend(&out, "| `", Hex(g.id), "` | ", g.requests, " | ", Pct(g.share), " | ",
                      g.prefix_tokens, " tokens | ", absl::StrFormat("%.1f", g.shared_blocks_mean),
                      " | ", absl::StrFormat("%.1f", g.reuse_distance_s), " | ",
                      absl::StrFormat("%.0f", g.reuse_distance_requests), " |\n");
    }
    out += "\n";
  }
  out += "## Prefix hygiene\n\n";
  if (r.set->format != "requests") {
    out += "Not available for a trace: it has no prompt text.\n\n";
  } else if (r.findings.empty()) {
    out += "No early difference found in prompts that otherwise match.\n\n";
  }
  for (const HygieneFinding& f : r.findings) {
    absl::StrAppend(&out, "### ", f.what, " (`", f.kind, "`)\n\n");
    absl::StrAppend(&out, f.requests, " requests (", Pct(f.share),
                    ") differ from an earlier request only in a span of ", f.span_chars,
                    " characters (median) starting at character ", f.position_chars,
                    "; the ", absl::StrFormat("%.0f", f.blocked_chars_mean),
                    " characters after it match, on average, but a prefix cache cannot reuse "
                    "them. For example, line ",
                    f.example_line, " and line ", f.example_other_line, ":\n\n");
    absl::StrAppend(&out, "```\n", f.example, "\n```\n```\n", OtherExample(f), "\n```\n\n");
    absl::StrAppend(&out, "Change: ", f.advice, ". Hit rate with an unbounded cache: ",
                    Pct(f.hit_rate_now), " now, ", Pct(f.hit_rate_fixed), " ", f.fixed_as,
                    ".\n\n");
  }
  if (r.fleet) {
    absl::StrAppend(&out, "## On ", r.fleet->fleet,
                    "\n\nThe simulator's replay of the file at its own timestamps:\n\n",
                    r.fleet->markdown_table, "\n");
  }
  if (r.sizing) absl::StrAppend(&out, "## Sizing\n\n```\n", FormatSizing(*r.sizing), "```\n");
  return out;
}

std::string JsonReport(const AnalysisReport& r) {
  const SharingStats& s = r.sharing;
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("source").String(r.source);
  w.Key("format").String(r.set->format);
  w.Key("block_tokens").Int(r.set->block_tokens);
  w.Key("requests").Int(s.requests);
  w.Key("blocks").Int(s.blocks);
  w.Key("sharing_requests").Int(s.sharing_requests);
  w.Key("sharing_share").Double(s.sharing_share);
  w.Key("shared_fraction_mean").Double(s.shared_fraction_mean);
  w.Key("infinite_cache_hit_rate").Double(s.infinite_cache_hit_rate);
  w.Key("groups_total").Int(s.groups_total);
  w.Key("groups").BeginArray();
  for (const PrefixGroup& g : s.groups) {
    w.BeginObject();
    w.Key("id").String(Hex(g.id));
    w.Key("requests").Int(g.requests);
    w.Key("share").Double(g.share);
    w.Key("prefix_tokens").Int(g.prefix_tokens);
    w.Key("shared_blocks_mean").Double(g.shared_blocks_mean);
    w.Key("reuse_distance_s").Double(g.reuse_distance_s);
    w.Key("reuse_distance_requests").Double(g.reuse_distance_requests);
    w.EndObject();
  }
  w.EndArray();
  w.Key("findings").BeginArray();
  for (const HygieneFinding& f : r.findings) {
    w.BeginObject();
    w.Key("kind").String(f.kind);
    w.Key("what").String(f.what);
    w.Key("advice").String(f.advice);
    w.Key("requests").Int(f.requests);
    w.Key("share").Double(f.share);
    w.Key("position_chars").Int(f.position_chars);
    w.Key("span_chars").Int(f.span_chars);
    w.Key("blocked_chars_mean").Double(f.blocked_chars_mean);
    w.Key("example").String(f.example);
    w.Key("example_line").Int(f.example_line);
    w.Key("example_other").String(f.example_other);
    w.Key("example_other_line").Int(f.example_other_line);
    w.Key("hit_rate_now").Double(f.hit_rate_now);
    w.Key("hit_rate_fixed").Double(f.hit_rate_fixed);
    w.Key("fixed_as").String(f.fixed_as);
    w.EndObject();
  }
  w.EndArray();
  if (r.fleet) {
    w.Key("fleet").BeginObject();
    w.Key("fleet").String(r.fleet->fleet);
    w.Key("pooled_hit_rate").Double(r.fleet->pooled_hit_rate);
    w.Key("policies").BeginArray();
    for (size_t i = 0; i < r.fleet->policies.size(); ++i) {
      w.BeginObject();
      w.Key("policy").String(r.fleet->policies[i]);
      w.Key("hit_rate").Double(r.fleet->hit_rate[i]);
      w.Key("ttft_p50_s").Double(r.fleet->ttft_p50_s[i]);
      w.Key("ttft_p99_s").Double(r.fleet->ttft_p99_s[i]);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  if (r.sizing) {
    const Sizing& s = *r.sizing;
    w.Key("sizing").BeginObject();
    w.Key("profile").String(s.options.profile);
    w.Key("target_hit_rate").Double(s.options.target_hit_rate);
    w.Key("target_ttft_p50_s").Double(s.options.target_ttft_p50_s);
    const auto point = [&w](const SizingPoint& p) {
      w.BeginObject();
      w.Key("replicas").Int(p.replicas);
      w.Key("kv_tokens_per_replica").Int(p.kv_tokens_per_replica);
      w.Key("hit_rate").Double(p.hit_rate);
      w.Key("ttft_p50_s").Double(p.ttft_p50_s);
      w.Key("meets").Bool(p.meets);
      w.EndObject();
    };
    w.Key("points").BeginArray();
    for (const SizingPoint& p : s.points) point(p);
    w.EndArray();
    w.Key("smallest");
    if (s.smallest) {
      point(*s.smallest);
    } else {
      w.Null();
    }
    w.EndObject();
  }
  w.EndObject();
  out += "\n";
  return out;
}

}  // namespace warmroute::analyze
