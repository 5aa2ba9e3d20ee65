// The template language, construct by construct: each expected text is what Jinja2 renders in
// transformers' environment (checked with Debian's python3-jinja2), and each refusal and bound.
#include "core/template/template.h"

#include <string>

#include "core/template/json_value.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::jinja {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::string> Render(std::string_view source, std::string_view variables = "{}",
                                   const Limits& limits = {}) {
  absl::StatusOr<Template> t = Template::Parse(source, limits);
  if (!t.ok()) return t.status();
  absl::StatusOr<Value> vars = ValueFromJson(variables);
  if (!vars.ok()) return vars.status();
  const FixedWallClock clock(std::chrono::system_clock::from_time_t(1753531200));
  return t->Render(*vars, RenderOptions{.clock = &clock});
}

struct Case {
  const char* name;
  const char* source;
  const char* variables;
  const char* expected;
};

// Generated from Jinja2's own renders of each source with its variables.
constexpr Case kCases[] = {
    {"IfElifElse", "{% if x > 2 %}big{% elif x > 0 %}small{% else %}none{% endif %}", "{\"x\": 1}",
     "small"},
    {"ForLoopVariables",
     "{% for i in items %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ "
     "loop.length }}{{ loop.revindex }}|{% endfor %}",
     "{\"items\": [\"a\", \"b\"]}", "10TrueFalse22|21FalseTrue21|"},
    {"ForPrevNextItem",
     "{% for i in items %}{{ loop.previtem ~ '<' ~ i ~ '>' ~ loop.nextitem }},{% endfor %}",
     "{\"items\": [1, 2, 3]}", "<1>2,1<2>3,2<3>,"},
    {"ForTupleUnpackingOverItems", "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}",
     "{\"d\": {\"b\": 1, \"a\": 2}}", "b=1;a=2;"},
    {"ForElse", "{% for i in [] %}x{% else %}empty{% endfor %}", "{}", "empty"},
    {"ForInlineFilter", "{% for i in range(6) if i is odd %}{{ i }}{{ loop.length }}{% endfor %}",
     "{}", "133353"},
    {"ForOverDictAndString",
     "{% for k in d %}{{ k }}{% endfor %}{% for c in 'hé' %}[{{ c }}]{% endfor %}",
     "{\"d\": {\"x\": 1, \"y\": 2}}", "xy[h][é]"},
    {"BreakContinue",
     "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% "
     "endif %}{{ i }}{% endfor %}",
     "{}", "0134"},
    {"SetInsideLoopStaysInTheIteration",
     "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", "{}",
     "12121"},
    {"SetInsideIfLeaks", "{% if true %}{% set y = 3 %}{% endif %}{{ y }}", "{}", "3"},
    {"NamespaceCarriesOutOfLoops",
     "{% set ns = namespace(n=0, seen=false) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% "
     "endfor %}{{ ns.n }}{{ ns.seen }}",
     "{}", "6False"},
    {"BlockSet", "{% set text %}a{{ 1 + 1 }}b{% endset %}[{{ text }}]", "{}", "[a2b]"},
    {"TupleSet", "{% set a, b = 1, 'x' %}{{ a }}{{ b }}", "{}", "1x"},
    {"MacroWithDefaults",
     "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} "
     "{{ greet('Bo', punct='?') }} {{ greet(name='Cy') }}",
     "{}", "Hi Ann! Hi Bo? Hi Cy!"},
    {"RecursiveMacro",
     "{% macro count(n) %}{{ n }}{% if n > 0 %}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ "
     "count(3) }}",
     "{}", "3210"},
    {"Comments", "a{# a comment #}b", "{}", "ab"},
    {"WhitespaceControl", "a  {{- 'b' -}}  c\n  {%- if true %} d {% endif -%}  \n e", "{}",
     "abc d e"},
    {"TrimAndLstripBlocks",
     "<ul>\n    {% for i in [1, 2] %}\n    <li>{{ i }}</li>\n    {% endfor %}\n</ul>\n", "{}",
     "<ul>\n    <li>1</li>\n    <li>2</li>\n</ul>"},
    {"PlusDisablesLstrip", "x\n    {%+ if true %}y{% endif %}", "{}", "x\n    y"},
    {"RawBlock", "{% raw %}{{ not rendered }}{% endraw %}", "{}", "{{ not rendered }}"},
    {"TrailingNewlineDropped", "text\n", "{}", "text"},
    {"Arithmetic",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 10 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 "
     "}} {{ (1 + 2) * 3 }} {{ -x }} {{ 0.1 + 0.2 }}",
     "{\"x\": 4}", "3 -4 2 3.5 5.0 1024 7 9 -4 0.30000000000000004"},
    {"StringOperators",
     "{{ 'a' + 'b' }} {{ 'a' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ 'b' in 'abc' }} {{ 'z' not in 'abc' "
     "}}",
     "{}", "ab a1None ababab True True"},
    {"Comparisons",
     "{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 != "
     "3 }}",
     "{}", "True True True True True False"},
    {"LogicReturnsOperands", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ none or [] }} {{ not 0 }}", "{}",
     "x b [] True"},
    {"Ternary", "{{ 'yes' if x else 'no' }}{{ 'only' if false }}", "{\"x\": []}", "no"},
    {"SubscriptsAndSlices",
     "{{ s[1:] }} {{ s[::-1] }} {{ s[-1] }} {{ l[1:3] }} {{ l[-2:] }} {{ l[::2] }} {{ s[0] }}",
     "{\"s\": \"héllo\", \"l\": [1, 2, 3, 4]}", "éllo olléh o [2, 3] [3, 4] [1, 3] h"},
    {"AttributeFallsBackToItem",
     "{{ m.content }} {{ m['role'] }} {{ m.missing }}|{{ m.items is defined }}",
     "{\"m\": {\"role\": \"user\", \"content\": \"hi\"}}", "hi user |True"},
    {"ListAndDictLiterals",
     "{{ [1, 'a', none, true, 1.5] }} {{ {'k': 'v', 'n': [1]} }} {{ (1,) }} {{ () }}", "{}",
     "[1, 'a', None, True, 1.5] {'k': 'v', 'n': [1]} (1,) ()"},
    {"PythonStrOfValues",
     "{{ 1.0 }} {{ 1e20 }} {{ 1e-5 }} {{ 3.0 * 2 }} {{ true }} {{ none }} {{ \"it's\" }} {{ "
     "['it\\'s', \"q\\\"\"] }}",
     "{}", "1.0 1e+20 1e-05 6.0 True None it's [\"it's\", 'q\"']"},
    {"UndefinedPrintsEmpty",
     "[{{ nothing }}][{{ nothing|length }}][{{ nothing|trim }}][{{ nothing ~ 'x' }}]{% for i in "
     "nothing %}x{% endfor %}",
     "{}", "[][0][][x]"},
    {"Tests",
     "{{ x is defined }}{{ y is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number "
     "}}{{ 1 is integer }}{{ 1.5 is integer }}{{ d is mapping }}{{ l is iterable }}{{ 'a' is "
     "iterable }}{{ l is sequence }}{{ true is boolean }}{{ true is true }}{{ false is false }}{{ "
     "1 is true }}",
     "{\"x\": 1, \"d\": {}, \"l\": []}",
     "TrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueTrueTrueFalse"},
    {"TestsWithArguments",
     "{{ 2 is equalto 2 }}{{ 3 is divisibleby 3 }}{{ 'a' is in ['a'] }}{{ x is not none }}{{ 4 is "
     "even }}{{ 5 is gt 3 }}{{ 5 is eq(5) }}",
     "{\"x\": 0}", "TrueTrueTrueTrueTrueTrueTrue"},
    {"FiltersOnStrings",
     "{{ '  a b  '|trim }}|{{ 'hello'|upper }}|{{ 'HeLLo'|lower }}|{{ 'hello world'|capitalize "
     "}}|{{ 'hello-world x'|title }}|{{ 'aXbX'|replace('X', '-') }}|{{ 'x'|string }}|{{ "
     "'abc'|length }}|{{ '%s=%d'|format('a', 3) }}",
     "{}", "a b|HELLO|hello|Hello world|Hello-World X|a-b-|x|3|a=3"},
    {"FiltersOnLists",
     "{{ l|join(', ') }}|{{ l|first }}|{{ l|last }}|{{ l|length }}|{{ l|count }}|{{ l|reverse|list "
     "}}|{{ l|sort }}|{{ l|sum }}|{{ l|max }}|{{ l|min }}|{{ [1, 1, 2]|unique|list }}",
     "{\"l\": [3, 1, 2]}", "3, 1, 2|3|2|3|3|[2, 1, 3]|[1, 2, 3]|6|3|1|[1, 2]"},
    {"SelectRejectMap",
     "{{ l|select('odd')|list }} {{ l|reject('equalto', 2)|list }} {{ ms|selectattr('role', "
     "'equalto', 'user')|map(attribute='content')|join('/') }} {{ ms|rejectattr('role', 'equalto', "
     "'user')|list|length }} {{ ['a', 'b']|map('upper')|list }}",
     "{\"l\": [1, 2, 3], \"ms\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"bot\", "
     "\"content\": \"b\"}, {\"role\": \"user\", \"content\": \"c\"}]}",
     "[1, 3] [1, 3] a/c 1 ['A', 'B']"},
    {"DefaultFilter",
     "{{ x|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ y|d('e') }}",
     "{\"y\": 0}", "d None d 0"},
    {"IntAndFloatFilters",
     "{{ '42'|int }} {{ 'x'|int }} {{ 3.9|int }} {{ '1.5'|float }} {{ 2|float }} {{ -3|abs }} {{ "
     "2.5|round }} {{ 3.14159|round(2) }}",
     "{}", "42 0 3 1.5 2.0 3 2.0 3.14"},
    {"ItemsAndDictMethods",
     "{{ d|items|list }} {{ d.keys()|list }} {{ d.values()|list }} {% for k, v in d.items() %}{{ k "
     "}}{{ v }}{% endfor %} {{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }}",
     "{\"d\": {\"a\": 1, \"b\": [2]}}",
     "[('a', 1), ('b', [2])] ['a', 'b'] [1, [2]] a1b[2] 1 dflt None"},
    {"ToJson",
     "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ 'é\"\\n'|tojson }}|{{ [1.0, none, true]|tojson "
     "}}|{{ {}|tojson(indent=2) }}|{{ d|tojson(separators=(',', ':')) }}|{{ "
     "d|tojson(sort_keys=true) }}|{{ 'é'|tojson(ensure_ascii=true) }}",
     "{\"d\": {\"b\": [1, {\"c\": \"東\"}], \"a\": null}}",
     "{\"b\": [1, {\"c\": \"東\"}], \"a\": null}|{\n  \"b\": [\n    1,\n    {\n      \"c\": "
     "\"東\"\n    }\n  ],\n  \"a\": null\n}|\"é\\\"\\n\"|[1.0, null, "
     "true]|{}|{\"b\":[1,{\"c\":\"東\"}],\"a\":null}|{\"a\": null, \"b\": [1, {\"c\": "
     "\"東\"}]}|\"\\u00e9\""},
    {"StringMethods",
     "{{ s.startswith('He') }}{{ s.endswith(('x', 'o')) }}|{{ s.split('l') }}|{{ ' a  b '.split() "
     "}}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ '  x '.strip() }}|{{ "
     "'xxaxx'.strip('x') }}|{{ '  x '.lstrip() }}|{{ '  x '.rstrip() }}|{{ s.lower() }}{{ "
     "s.upper() }}|{{ s.replace('l', 'L', 1) }}|{{ '{}-{}'.format(1, 'a') }}|{{ "
     "'{name}!'.format(name='n') }}|{{ s.find('l') }}|{{ s.count('l') }}|{{ '-'.join(['a', 'b']) "
     "}}|{{ 'hello world'.title() }}|{{ '12'.isdigit() }}",
     "{\"s\": \"Hello\"}",
     "TrueTrue|['He', '', 'o']|['a', 'b']|['a', 'b,c']|['a,b', 'c']|x|a|x |  "
     "x|helloHELLO|HeLlo|1-a|n!|2|2|a-b|Hello World|True"},
    {"UnicodeWhitespaceStrip", "[{{ s|trim }}][{{ s.strip() }}][{{ s.split()|length }}]",
     "{\"s\": \"　  x y \\n\"}", "[x y][x y][2]"},
    {"Globals",
     "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ dict(a=1) }} {{ namespace(a=1).a }}", "{}",
     "[0, 1, 2] [1, 3, 5] {'a': 1} 1"},
    {"FilterBlock", "{% filter upper %}shout {{ 'it' }}{% endfilter %}", "{}", "SHOUT IT"},
    {"GenerationTag", "{% generation %}{% set z = 1 %}answer{{ z }}{% endgeneration %}[{{ z }}]",
     "{}", "answer1[]"},
    {"LoopKeptPastItsIteration",
     "{% set ns = namespace() %}{% for i in items %}{% if loop.first %}{% set ns.first = loop %}"
     "{% endif %}{% set ns.last = loop %}{% endfor %}{{ ns.first.index }}{{ ns.last.index }}"
     "[{{ ns.first.nextitem }}]{% for i in items %}{% set l = loop %}{{ l.index }}{% endfor %}",
     "{\"items\": [1, 2, 3]}", "33[]123"},
    {"NestedLoopsHaveTheirOwnLoop",
     "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ b }}{% endfor %}{{ loop.index "
     "}};{% endfor %}",
     "{}", "1x2y1;1x2y2;"},
    {"MessagesAlternation",
     "{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ "
     "raise_exception('roles must alternate') }}{% endif %}{{ m.content }}{% endfor %}",
     "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", "
     "\"content\": \"b\"}]}",
     "ab"},
};

TEST(TemplateTest, RendersEachConstructAsJinja2) {
  for (const Case& c : kCases) {
    absl::StatusOr<std::string> text = Render(c.source, c.variables);
    ASSERT_TRUE(text.ok()) << c.name << ": " << text.status();
    EXPECT_EQ(*text, c.expected) << c.name;
  }
}

TEST(TemplateTest, StrftimeNowReadsTheGivenClock) {
  EXPECT_EQ(*Render("{{ strftime_now('%d %b %Y %A') }}"), "26 Jul 2025 Saturday");
  absl::StatusOr<Template> t = Template::Parse("{{ strftime_now('%Y') }}");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->Render(Value::MakeDict(std::make_shared<Dict>()), {}).ok());
}

TEST(TemplateTest, RefusesUnsupportedConstructsAtParseTime) {
  const std::pair<const char*, const char*> kRefused[] = {
      {"a\n{{ x|wordwrap }}", "unsupported filter 'wordwrap' at line 2"},
      {"{% include 'other' %}", "unsupported tag 'include' at line 1"},
      {"{% for i in x %}{{ loop.cycle('a', 'b') }}{% endfor %}",
       "unsupported method 'cycle' at line 1"},
      {"{{ x is prime }}", "unsupported test 'prime' at line 1"},
      {"{{ cycler('a') }}", "unsupported function 'cycler' at line 1"},
      {"{{ l|select('prime')|list }}", "unsupported test 'prime' at line 1"},
      {"{% for x in y recursive %}{% endfor %}", "unsupported recursive for loop"},
      {"{% break %}", "'break' outside of a loop"},
      {"{% do x.append(1) %}", "unsupported tag 'do'"},
      {"{% if x %}open", "missing 'endif'"},
      {"{{ x ", "missing '}}'"},
      {"{# never closed", "missing end of comment tag"},
      {"{{ 'unterminated }}", "unterminated string"},
      {"{{ x $ y }}", "unexpected character '$'"},
  };
  for (const auto& [source, message] : kRefused) {
    absl::StatusOr<Template> t = Template::Parse(source);
    ASSERT_FALSE(t.ok()) << source;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << source;
    EXPECT_THAT(t.status().message(), HasSubstr(message)) << source;
  }
  EXPECT_FALSE(Template::Parse("\xff\xfe").ok());
}

TEST(TemplateTest, RaiseExceptionEndsTheRenderWithItsMessage) {
  absl::StatusOr<std::string> text =
      Render("{% if messages|length > 1 %}{{ raise_exception('Only one message!') }}{% endif %}",
             R"({"messages": [1, 2]})");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), "Only one message!");
}

TEST(TemplateTest, RuntimeErrorsAreStatusesNamingTheLine) {
  const std::pair<const char*, const char*> kErrors[] = {
      {"\n{{ x.y }}", "'x' is undefined (template line 2)"},
      {"{{ x + 1 }}", "'x' is undefined"},
      {"{{ 1 + 'a' }}", "unsupported operand type(s) for +: 'int' and 'str'"},
      {"{{ 'a' + 1 }}", "can only concatenate str"},
      {"{{ 1 / 0 }}", "division by zero"},
      {"{{ 3 < 'a' }}", "'<' not supported between instances of 'int' and 'str'"},
      {"{% set l = [] %}{{ l.append(1) }}",
       "access to attribute 'append' of 'list' object is unsafe."},
      {"{{ none|length }}", "has no len()"},
      {"{{ {'a': x}|tojson }}", "is not JSON serializable"},
      {"{% set n = 5 %}{% set n.x = 1 %}", "non-namespace object"},
      {"{% for a, b in [1] %}{% endfor %}", "not iterable"},
      {"{{ 9223372036854775807 + 1 }}", "integer overflow"},
  };
  for (const auto& [source, message] : kErrors) {
    absl::StatusOr<std::string> text = Render(source);
    ASSERT_FALSE(text.ok()) << source;
    EXPECT_THAT(text.status().message(), HasSubstr(message)) << source;
  }
}

// `+` and `~` chains are joined in one pass (evaluate.cc EvalChain); the results and the errors
// are those of Python's pairwise evaluation, left to right.
TEST(TemplateTest, ConcatenationChainsActAsPairwiseOperators) {
  const std::pair<const char*, const char*> kCases[] = {
      {"{{ 'a' + b + 'c' + 'd' }}", "aBcd"},
      {"{% set x = 'a' + b + 'c' %}{{ x ~ '|' ~ x }}", "aBc|aBc"},
      {"{{ 1 + 2 + 3 }}", "6"},
      {"{{ (1 + 2) ~ 'x' ~ 3 ~ none }}", "3x3None"},
      {"{{ [1] + [2] + [3] }}", "[1, 2, 3]"},
      {"{{ 'x' ~ [1] ~ 2.5 }}", "x[1]2.5"},
      {"{{ ('a' + 'b') + ('c' + 'd') }}", "abcd"},
      {"{{ 'p' + (1 + 2)|string + 'q' }}", "p3q"},
  };
  for (const auto& [source, expected] : kCases) {
    absl::StatusOr<std::string> text = Render(source, R"({"b": "B"})");
    ASSERT_TRUE(text.ok()) << source << ": " << text.status();
    EXPECT_EQ(*text, expected) << source;
  }
  const std::pair<const char*, const char*> kErrors[] = {
      {"{{ 'a' + 'b' + 1 + x }}", "can only concatenate str (not \"int\") to str"},
      {"{{ 'a' + x + 1 }}", "'x' is undefined"},
      {"{{ 1 + 2 + 'a' }}", "unsupported operand type(s) for +: 'int' and 'str'"},
      {"{{ 1 + 2 ~ 'a' }}", "unsupported operand type(s) for +: 'int' and 'str'"},  // ~ binds first
      {"{{ [1] + [2] + 'a' }}", "'list' and 'str'"},
  };
  for (const auto& [source, message] : kErrors) {
    absl::StatusOr<std::string> text = Render(source);
    ASSERT_FALSE(text.ok()) << source;
    EXPECT_THAT(text.status().message(), HasSubstr(message)) << source;
  }
  Limits limits;
  limits.max_output_bytes = 1000;
  const std::string long_chain = "{{ " + [] {
    std::string s = "'" + std::string(400, 'x') + "'";
    for (int i = 0; i < 2; ++i) s += " + '" + std::string(400, 'y') + "'";
    return s;
  }() + " }}";
  EXPECT_EQ(Render(long_chain, "{}", limits).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Render("{% set s = 'x' * 600 %}{{ s }}{{ s + 'y' }}", "{}", limits).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(TemplateTest, BoundsEveryRender) {
  Limits limits;
  limits.max_output_bytes = 1000;
  limits.max_loop_iterations = 500;
  limits.max_macro_depth = 20;
  const char* kRunaway[] = {
      "{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}",
      "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
      "{{ 'x' * 5000 }}",
      "{% for i in range(400) %}xxxxx{% endfor %}",
      "{{ range(10)|join('x' * 200) }}",
  };
  for (const char* source : kRunaway) {
    absl::StatusOr<std::string> text = Render(source, "{}", limits);
    ASSERT_FALSE(text.ok()) << source;
    EXPECT_EQ(text.status().code(), absl::StatusCode::kResourceExhausted) << source;
  }
  EXPECT_EQ(Render("{{ 'ab' * 4611686018427387904 }}").status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(*Render("{{ [] * 4611686018427387904 }}{{ (-1) ** 9223372036854775807 }}"), "[]-1");
  EXPECT_EQ(*Render("{{ 'abc'[::-9223372036854775807] }}"), "c");
  EXPECT_FALSE(Render("{{ range(-9223372036854775807, 9223372036854775807)|length }}").ok());
  EXPECT_THAT(Render("{% set ns = namespace() %}{% set ns.me = [ns] %}").status().message(),
              HasSubstr("cannot hold itself"));
  std::string chain = "{{ 1";
  for (int i = 0; i < 3000; ++i) chain += " if x else 1";
  EXPECT_THAT(Template::Parse(chain + " }}").status().message(), HasSubstr("nests too deeply"));
  // The sandbox's own bound on range().
  EXPECT_THAT(Render("{{ range(1000000)|length }}").status().message(), HasSubstr("MAX_RANGE"));
  // Deep nesting is refused at parse time, not by the stack.
  const std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_THAT(Template::Parse(deep).status().message(), HasSubstr("nests too deeply"));
  const std::string deep_ifs = [] {
    std::string s;
    for (int i = 0; i < 1000; ++i) s += "{% if true %}";
    return s;
  }();
  EXPECT_THAT(Template::Parse(deep_ifs).status().message(), HasSubstr("nests too deeply"));
  const std::string deep_json = std::string(200, '[') + std::string(200, ']');
  EXPECT_FALSE(Render("{{ v|tojson }}", "{\"v\": " + deep_json + "}").ok());
}

TEST(TemplateTest, AnalysisFindsUndeclaredVariablesAndContentLoops) {
  absl::StatusOr<Template> t = Template::Parse(
      "{% set msgs = messages[1:] %}{% for m in msgs %}{% for part in m['content'] %}"
      "{{ part.text }}{% endfor %}{% endfor %}{% if enable_thinking is defined %}{% endif %}"
      "{% set local = 1 %}{{ local }}");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->loops_over_message_content());
  EXPECT_THAT(t->undeclared_variables(),
              ::testing::UnorderedElementsAre("messages", "enable_thinking"));
  absl::StatusOr<Template> plain =
      Template::Parse("{% for m in messages %}{{ m.content }}{% endfor %}");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->loops_over_message_content());
}

}  // namespace
}  // namespace warmroute::jinja
