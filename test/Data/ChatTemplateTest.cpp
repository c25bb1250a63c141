// Chat templates (ChatTemplate.h, Jinja.h): the four real templates of
// .cache/tokenizers (scripts/fetch_tokenizers.sh) render the committed
// conversations (test/data/chat) exactly as the reference did
// (benchmarks/reference/make_chat_template_references.mjs); the spans of
// each assistant message cover its content as it stands in the render;
// jinja2's semantics on the constructs the templates use; located refusals
// of bad and unsupported templates; bounded renders.
#include "swift/Plan/Error.h"
#include "swift/Data/ChatTemplate.h"
#include "swift/Data/Jinja.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

using namespace swift::data;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

const std::string kData = SWIFT_TEST_DATA_DIR "/chat";
const std::string kTokenizers = SWIFT_SOURCE_DIR "/.cache/tokenizers";
// The four tokenizer_config.json templates, and Llama 3.1 Instruct's
// (test/data/chat/llama3_1_instruct.jinja, through --chat-template's path).
const char *kModels[] = {"qwen3", "qwen2_5", "llama3_1", "mistral_nemo", "llama3_1_instruct"};

std::vector<ojson> readJsonl(const std::string &path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<ojson> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty())
      rows.push_back(ojson::parse(line));
  return rows;
}

/// The model's real tokenizer_config.json; a missing one fails loudly.
std::string configOf(const std::string &model) {
  std::string p = kTokenizers + "/" + model + "/tokenizer_config.json";
  if (!fs::exists(p))
    ADD_FAILURE() << p << " is missing: run scripts/fetch_tokenizers.sh";
  return p;
}

ChatTemplate templateOf(const std::string &model) {
  if (model == "llama3_1_instruct")
    return ChatTemplate::fromFile(kData + "/llama3_1_instruct.jinja",
                                  ChatTemplate::specialTokensOf(configOf("llama3_1")));
  return ChatTemplate::fromTokenizerConfig(configOf(model));
}

std::string renderText(const std::string &tmpl, const ojson &context = ojson::object()) {
  return jinja::Template::parse(tmpl, "t").render(context).text;
}

/// The UserError a render (or parse) of `tmpl` throws: "" when none.
std::string errorOf(const std::string &tmpl, const ojson &context = ojson::object(),
                    const jinja::Limits &limits = {}) {
  try {
    jinja::Template::parse(tmpl, "t.jinja").render(context, {}, limits);
  } catch (const swift::plan::UserError &e) {
    return e.what();
  }
  return "";
}

// Python's str.strip / lstrip / rstrip of `chars` (whitespace when empty),
// for the texts of the test data (ASCII whitespace only there).
std::string pyStrip(const std::string &s, const std::string &chars, bool l, bool r) {
  auto in = [&](char c) {
    return chars.empty() ? (c == ' ' || (c >= '\t' && c <= '\r')) : chars.find(c) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  while (l && b < e && in(s[b]))
    ++b;
  while (r && e > b && in(s[e - 1]))
    --e;
  return s.substr(b, e - b);
}

std::vector<std::string> pySplit(const std::string &s, const std::string &sep) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t f; (f = s.find(sep, b)) != std::string::npos; b = f + sep.size())
    out.push_back(s.substr(b, f - b));
  out.push_back(s.substr(b));
  return out;
}

/// What of message i's content (reasoning: its reasoning_content, or the
/// think block of its content) the template puts in the render, as the
/// model card's template says it (an independent statement of each
/// template's rule, not the renderer).
std::string expectedInRender(const std::string &model, const ojson &messages, size_t i,
                             bool reasoning) {
  const ojson &m = messages[i];
  std::string content = m["content"].get<std::string>();
  bool hasTools = m.contains("tool_calls");
  if (model == "llama3_1")
    return reasoning ? "" : pyStrip(content, "", true, true);
  if (model == "llama3_1_instruct") // a tool call's turn shows only the call
    return reasoning || hasTools ? "" : pyStrip(content, "", true, true);
  if (model == "mistral_nemo")
    return reasoning || hasTools ? "" : content;
  if (model == "qwen2_5")
    return reasoning ? "" : content;
  // qwen3: reasoning_content, or the think block of content, is shown only
  // after the last user query, and then the content is lstripped of '\n'.
  std::string rc;
  bool hasRc = m.contains("reasoning_content") && m["reasoning_content"].is_string();
  bool split = false;
  if (hasRc) {
    rc = m["reasoning_content"].get<std::string>();
  } else if (content.find("</think>") != std::string::npos) {
    auto parts = pySplit(content, "</think>");
    rc = pySplit(pyStrip(parts[0], "\n", false, true), "<think>").back();
    rc = pyStrip(rc, "\n", true, false);
    content = pyStrip(parts.back(), "\n", true, false);
    split = true;
  }
  size_t lastQuery = messages.size() - 1;
  for (size_t k = messages.size(); k-- > 0;) {
    const ojson &u = messages[k];
    std::string c = u["content"].get<std::string>();
    if (u["role"] == "user" && !(c.rfind("<tool_response>", 0) == 0 && c.size() >= 16 &&
                                 c.compare(c.size() - 16, 16, "</tool_response>") == 0)) {
      lastQuery = k;
      break;
    }
  }
  bool showThink = i > lastQuery && (i + 1 == messages.size() || !rc.empty());
  if (reasoning) {
    if (!showThink)
      return "";
    std::string shown = pyStrip(rc, "\n", true, true);
    // a think block taken from content is content's text (source i, not
    // reasoning): it counts as content below.
    return split ? "" : shown;
  }
  if (showThink) {
    // A think block cut from content is content's text too: two pieces
    // (reasoning, answer), apart in the render ("\x01" between them).
    std::string out = pyStrip(content, "\n", true, false);
    std::string think = split ? pyStrip(rc, "\n", true, true) : "";
    return think.empty() || out.empty() ? think + out : think + "\x01" + out;
  }
  return content;
}

struct Case {
  ojson conv, expected;
};

std::vector<Case> casesOf(const std::string &model) {
  auto convs = readJsonl(kData + "/conversations.jsonl");
  auto expected = readJsonl(kData + "/" + model + ".expected.jsonl");
  EXPECT_EQ(convs.size(), expected.size());
  EXPECT_GE(convs.size(), 200u);
  std::vector<Case> out;
  for (size_t k = 0; k < convs.size() && k < expected.size(); ++k) {
    EXPECT_EQ(convs[k]["id"], expected[k]["id"]);
    out.push_back({convs[k], expected[k]});
  }
  return out;
}

class RealTemplate : public ::testing::TestWithParam<const char *> {};

// Each real template renders every committed conversation as the reference
// did, or raises the same error.
TEST_P(RealTemplate, RendersTheReferenceConversations) {
  std::string model = GetParam();
  ChatTemplate t = templateOf(model);
  int same = 0, n = 0;
  for (const Case &c : casesOf(model)) {
    ++n;
    const ojson &conv = c.conv;
    std::string got, error;
    try {
      got = t.renderOrdered(conv["messages"], conv["add_generation_prompt"].get<bool>(),
                            conv["extra"])
                .text;
    } catch (const swift::plan::UserError &e) {
      error = e.what();
    }
    if (c.expected.contains("error")) {
      std::string want = c.expected["error"].get<std::string>();
      EXPECT_NE(error.find(want), std::string::npos)
          << model << " case " << conv["id"] << ": expected the error " << want << ", got "
          << (error.empty() ? "a render" : error);
      same += error.find(want) != std::string::npos;
    } else {
      std::string want = c.expected["text"].get<std::string>();
      EXPECT_EQ(error, "") << model << " case " << conv["id"];
      EXPECT_EQ(got, want) << model << " case " << conv["id"] << " (" << conv["note"] << ")";
      same += error.empty() && got == want;
    }
  }
  EXPECT_EQ(same, n);
  EXPECT_GE(n, 200);
}

// Every span is a verbatim copy of its source, and the spans of message i
// cover exactly its content as the template shows it.
TEST_P(RealTemplate, SpansCoverEachMessagesContentAsRendered) {
  std::string model = GetParam();
  ChatTemplate t = templateOf(model);
  size_t checked = 0, tagged = 0;
  for (const Case &c : casesOf(model)) {
    if (c.expected.contains("error"))
      continue;
    const ojson &messages = c.conv["messages"];
    Rendered r = t.renderOrdered(messages, c.conv["add_generation_prompt"].get<bool>(),
                                 c.conv["extra"]);
    std::string id = model + " case " + std::to_string(c.conv["id"].get<int>());
    size_t prevEnd = 0;
    for (const SourceSpan &s : r.spans) {
      ASSERT_GE(s.begin, prevEnd) << id << ": spans overlap or are out of order";
      ASSERT_LT(s.begin, s.end) << id;
      ASSERT_LE(s.end, r.text.size()) << id;
      prevEnd = s.end;
      ASSERT_GE(s.source, 0) << id;
      ASSERT_LT(size_t(s.source), messages.size()) << id;
      const ojson &m = messages[s.source];
      std::string src = m[s.reasoning ? "reasoning_content" : "content"].get<std::string>();
      ASSERT_LE(s.sourceOffset + (s.end - s.begin), src.size()) << id;
      EXPECT_EQ(r.text.substr(s.begin, s.end - s.begin),
                src.substr(s.sourceOffset, s.end - s.begin))
          << id << ": span of message " << s.source << " is not a copy of its text";
      ++tagged;
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      if (messages[i]["role"] != "assistant")
        continue;
      for (bool reasoning : {false, true}) {
        std::string covered;
        size_t lastEnd = 0;
        for (const SourceSpan &s : r.spans)
          if (size_t(s.source) == i && s.reasoning == reasoning) {
            if (!covered.empty() && s.begin != lastEnd)
              covered += "\x01";
            covered += r.text.substr(s.begin, s.end - s.begin);
            lastEnd = s.end;
          }
        EXPECT_EQ(covered, expectedInRender(model, messages, i, reasoning))
            << id << ", message " << i << (reasoning ? " reasoning" : " content");
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 400u);
  EXPECT_GT(tagged, 200u);
}

INSTANTIATE_TEST_SUITE_P(Models, RealTemplate, ::testing::ValuesIn(kModels),
                         [](const auto &info) { return std::string(info.param); });

// A user message's content is tagged too (the pipeline decides what trains);
// the template's own text and the special tokens are not.
TEST(ChatTemplate, TagsOnlyMessageText) {
  ChatTemplate t = ChatTemplate::fromTokenizerConfig(configOf("qwen2_5"));
  nlohmann::json messages = {{{"role", "user"}, {"content", "Hi"}},
                             {{"role", "assistant"}, {"content", "Hello there"}}};
  Rendered r = t.render(messages, false);
  ASSERT_EQ(r.spans.size(), 2u);
  EXPECT_EQ(r.text.substr(r.spans[0].begin, 2), "Hi");
  EXPECT_EQ(r.spans[0].source, 0);
  EXPECT_EQ(r.text.substr(r.spans[1].begin, r.spans[1].end - r.spans[1].begin), "Hello there");
  EXPECT_EQ(r.spans[1].source, 1);
  EXPECT_EQ(r.text.substr(r.spans[1].end, 11), "<|im_end|>\n");
  EXPECT_EQ(t.eosToken(), "<|im_end|>");
}

//===-- provenance through the operations ---------------------------------===//

std::vector<std::string> coveredBy(const Rendered &r) {
  std::vector<std::string> out;
  for (auto &s : r.spans)
    out.push_back(std::to_string(s.source) + ":" + std::to_string(s.sourceOffset) + ":" +
                  r.text.substr(s.begin, s.end - s.begin));
  return out;
}

Rendered renderTagged(const std::string &tmpl, const std::string &a, const std::string &b = "") {
  ojson ctx = {{"a", a}, {"b", b}};
  return jinja::Template::parse(tmpl, "t").render(ctx, {{"/a", 0}, {"/b", 1}});
}

TEST(JinjaProvenance, ConcatenationSlicingStripSplitJoinReplaceKeepSpans) {
  using V = std::vector<std::string>;
  EXPECT_EQ(coveredBy(renderTagged("<{{ a }}>", "xyz")), V{"0:0:xyz"});
  EXPECT_EQ(coveredBy(renderTagged("{{ '[' + a + '|' ~ b + ']' }}", "ab", "cd")),
            (V{"0:0:ab", "1:0:cd"}));
  EXPECT_EQ(coveredBy(renderTagged("{{ a[2:5] }}", "0123456")), V{"0:2:234"});
  EXPECT_EQ(coveredBy(renderTagged("{{ a[-2:] }}", "汉字ab")), V{"0:6:ab"});
  EXPECT_EQ(coveredBy(renderTagged("{{ a.strip() }}|{{ a|trim }}", "  hi \n")),
            (V{"0:2:hi", "0:2:hi"}));
  EXPECT_EQ(coveredBy(renderTagged("{{ a.lstrip('\\n') }}", "\n\nx\n")), V{"0:2:x\n"});
  EXPECT_EQ(coveredBy(renderTagged("{{ a.split('</think>')[-1] }}", "r</think>ans")),
            V{"0:9:ans"});
  EXPECT_EQ(coveredBy(renderTagged("{{ a.split(',')|join(';') }}", "p,q")),
            (V{"0:0:p", "0:2:q"}));
  EXPECT_EQ(coveredBy(renderTagged("{{ a.replace('X', b) }}", "aXc", "Y")),
            (V{"0:0:a", "1:0:Y", "0:2:c"}));
  EXPECT_EQ(coveredBy(renderTagged("{% set s %}[{{ a }}]{% endset %}{{ s }}", "in")),
            V{"0:0:in"});
  EXPECT_EQ(coveredBy(renderTagged("{% macro m(x) %}<{{ x }}>{% endmacro %}{{ m(a) }}", "mm")),
            V{"0:0:mm"});
  // Made text is not a copy: upper, tojson, str() of a list.
  EXPECT_TRUE(renderTagged("{{ a|upper }}{{ a|tojson }}{{ [a] }}", "abc").spans.empty());
  EXPECT_EQ(renderTagged("{{ a|upper }}{{ a|tojson }}{{ [a] }}", "abc").text,
            "ABC\"abc\"['abc']");
}

//===-- jinja2 semantics the templates rely on ----------------------------===//

TEST(JinjaSemantics, WhitespaceControlAsTransformersSetsIt) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: the
  // indentation before one; '-' strips all whitespace on its side; '+'
  // keeps; one trailing newline of the template is dropped.
  EXPECT_EQ(renderText("  {% if true %}\n  a\n  {% endif %}\nb\n"), "  a\nb");
  EXPECT_EQ(renderText("x  {%- if true -%}  \n y {%+ endif %}z"), "xy z");
  EXPECT_EQ(renderText("a {{ 1 }}\nb {# c #}\nc"), "a 1\nb c");
  EXPECT_EQ(renderText("{{- ' a ' -}}\n\n"), " a ");
  EXPECT_EQ(renderText("a\r\nb"), "a\nb");
  EXPECT_EQ(renderText("{% if true +%}\nx{% endif %}"), "\nx");
}

TEST(JinjaSemantics, ValuesPrintAsPython) {
  EXPECT_EQ(renderText("{{ none }}|{{ true }}|{{ 1.0 }}|{{ 2 ** 10 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|"
                       "{{ 7 / 2 }}|{{ 1e20 }}|{{ 0.0001 }}|{{ 1e-5 }}"),
            "None|True|1.0|1024|3|-4|3.5|1e+20|0.0001|1e-05");
  EXPECT_EQ(renderText("{{ ['a', 1, none, {'k': \"it's\"}] }}"),
            "['a', 1, None, {'k': \"it's\"}]");
  EXPECT_EQ(renderText("{{ x }}|{{ x|length }}|{{ x is defined }}|{% for i in x %}no{% endfor %}"),
            "|0|False|");
}

TEST(JinjaSemantics, ToJsonAsTransformers) {
  ojson ctx = {{"x", {{"b", 1}, {"a", {1, 2.5, "é\n\"", nullptr, true}}, {"c", ojson::object()}}}};
  EXPECT_EQ(renderText("{{ x|tojson }}", ctx),
            "{\"b\": 1, \"a\": [1, 2.5, \"é\\n\\\"\", null, true], \"c\": {}}");
  EXPECT_EQ(renderText("{{ x|tojson(indent=2) }}", ctx),
            "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    2.5,\n    \"é\\n\\\"\",\n    null,\n    true\n"
            "  ],\n  \"c\": {}\n}");
  EXPECT_EQ(renderText("{{ x|tojson(sort_keys=true, separators=(',', ':')) }}", ctx),
            "{\"a\":[1,2.5,\"é\\n\\\"\",null,true],\"b\":1,\"c\":{}}");
  EXPECT_EQ(renderText("{{ 'é😀'|tojson(ensure_ascii=true) }}"), "\"\\u00e9\\ud83d\\ude00\"");
}

TEST(JinjaSemantics, LoopsNamespacesAndScopes) {
  EXPECT_EQ(renderText("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}"
                       "{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.previtem }}"
                       "{{ loop.nextitem }},{% endfor %}"),
            "10TrueFalse33b,21FalseFalse32ac,32FalseTrue31b,");
  EXPECT_EQ(renderText("{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.length }}{% else %}E"
                       "{% endfor %}{% for x in [] %}{% else %}empty{% endfor %}"),
            "2242empty");
  EXPECT_EQ(renderText("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"
                       "{% if true %}{% set x = 3 %}{% endif %}{{ x }}"),
            "13");
  EXPECT_EQ(renderText("{% set ns = namespace(n=0) %}{% for i in range(5) %}{% set ns.n = ns.n + i %}"
                       "{% if i == 3 %}{% break %}{% endif %}{% endfor %}{{ ns.n }}"),
            "6");
  EXPECT_EQ(renderText("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
            "a=1;b=2;");
  EXPECT_EQ(renderText("{% for i in range(4) %}{% if i is odd %}{% continue %}{% endif %}{{ i }}"
                       "{% endfor %}"),
            "02");
}

TEST(JinjaSemantics, FiltersTestsAndStringMethods) {
  ojson ctx = {{"m", {{{"role", "user"}, {"c", "x"}}, {{"role", "tool"}},
                      {{"role", "user"}, {"tool_calls", 1}}}}};
  EXPECT_EQ(renderText("{{ m|selectattr('role', 'equalto', 'user')|list|length }}"
                       "{{ m|rejectattr('role', 'equalto', 'user')|map(attribute='role')|join(',') }}"
                       "{{ m|selectattr('tool_calls', 'undefined')|list|length }}"
                       "{{ m|map(attribute='role')|first }}{{ m|map(attribute='role')|last }}",
                       ctx),
            "2tool2useruser");
  EXPECT_EQ(renderText("{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'abc'[::-1] }}"
                       "{{ 'Hello'.startswith('He') }}{{ 'x'.endswith(('y', 'x')) }}"
                       "{{ 'ab'.upper() ~ 'CD'.lower() ~ 'ab cd'.title() ~ 'aB'|capitalize }}"),
            "['a', 'b', '', 'c']['a', 'b']cbaTrueTrueABcdAb CdAb");
  EXPECT_EQ(renderText("{{ x|default('d') }}{{ ''|default('e', true) }}{{ '3'|int + 1 }}"
                       "{{ 'x' in 'xyz' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 1 == 1.0 }}"
                       "{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}{{ 3 is number }}"
                       "{{ x is not defined and true }}"),
            "de4TrueTrueTrueTrueTrueTrueTrueTrueTrue");
  EXPECT_EQ(renderText("{{ '  x\\n'|trim }}|{{ 'a\\u3000'.strip() }}|{{ 'xxaxx'.strip('x') }}|"
                       "{{ 'a-b-c'.replace('-', '+', 1) }}|{{ [3, 1]|reverse|list }}|{{ 'ab'|list }}"),
            "x|a|a|a+b-c|[1, 3]|['a', 'b']");
  EXPECT_EQ(renderText("{{ 'yes' if x else 'no' }}{{ 'a' if true }}{{ (1, 2)[1] }}{{ [1,2,3][1:] }}"
                       "{{ {'a': {'b': 'c'}}.a.b }}{{ {'a': 1}['a'] }}{{ {'a': 1}.get('z', 5) }}"),
            "noa2[2, 3]c15");
  EXPECT_EQ(renderText("{% macro f(a, b='B') %}{{ a }}{{ b }}{% endmacro %}{{ f(1) }}{{ f(2, b=3) }}"),
            "1B23");
  // markupsafe's escape: &#34; for the quote, as Jinja renders it.
  EXPECT_EQ(renderText("{{ m|e }}|{{ 3|escape }}", {{"m", "<a href=\"x\">'&'</a>"}}),
            "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;|3");
}

//===-- refusals: located, one line, exit 2 (UserError) --------------------===//

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(errorOf("a\n{% if x %}\nb"), "t.jinja:3:2: unexpected end of template: expected "
                                            "'elif' or 'else' or 'endif'");
  EXPECT_NE(errorOf("{% for x in y %}{% endif %}").find("t.jinja:1:20: unexpected 'endif'"),
            std::string::npos);
  EXPECT_EQ(errorOf("\n  {% frobnicate %}"), "t.jinja:2:6: unknown tag 'frobnicate'");
  EXPECT_EQ(errorOf("{{ 1 + }}"), "t.jinja:1:8: unexpected the end of the '{{' tag in an expression");
  EXPECT_EQ(errorOf("{{ x | nosuchfilter }}"), "t.jinja:1:8: unknown filter 'nosuchfilter'");
  EXPECT_EQ(errorOf("{{ x is nosuchtest }}"), "t.jinja:1:9: unknown or unsupported test 'nosuchtest'");
  EXPECT_EQ(errorOf("ab {{ 'x"), "t.jinja:1:7: unterminated string");
  EXPECT_EQ(errorOf("ab {{ x "), "t.jinja:1:4: unclosed tag '{{'");
  EXPECT_EQ(errorOf("{# never closed"), "t.jinja:1:1: unclosed comment '{#'");
  EXPECT_EQ(errorOf("{% break %}"), "t.jinja:1:4: 'break' outside a loop");
  EXPECT_EQ(errorOf("{{ 99999999999999999999 }}"),
            "t.jinja:1:4: integer literal 99999999999999999999 out of range (64-bit integers only)");
}

TEST(JinjaErrors, UnsupportedConstructsAreRefusedNotRendered) {
  EXPECT_EQ(errorOf("x\n{% include 'other.jinja' %}"),
            "t.jinja:2:4: the 'include' tag is not supported (docs/runtime.md, Chat templates)");
  EXPECT_EQ(errorOf("{% call m() %}{% endcall %}"),
            "t.jinja:1:4: the 'call' tag is not supported (docs/runtime.md, Chat templates)");
  EXPECT_EQ(errorOf("{% for x in y recursive %}{% endfor %}"),
            "t.jinja:1:15: recursive loops are not supported");
  EXPECT_EQ(errorOf("{{ 'é'|upper }}"), "t.jinja:1:9: 'upper' of non-ASCII text is not supported");
  EXPECT_EQ(errorOf("{{ '%s' % 1 }}"), "t.jinja:1:9: '%' string formatting is not supported");
  EXPECT_EQ(errorOf("{{ 'a'.format(1) }}"), "t.jinja:1:7: the string method 'format' is not supported");
  EXPECT_EQ(errorOf("{{ [1].append(2) }}"),
            "t.jinja:1:7: the list method 'append' is not supported (lists are immutable in chat "
            "templates)");
  EXPECT_EQ(errorOf("{% if false %}{{ x|dictsort }}{% endif %}"),
            "t.jinja:1:20: the filter 'dictsort' is not supported (docs/runtime.md, Chat templates)");
  EXPECT_EQ(errorOf("{{ [1]|map('sort')|list }}"),
            "t.jinja:1:8: map(): unknown or unsupported filter 'sort'");
}

TEST(JinjaErrors, RuntimeErrorsAndRaiseException) {
  EXPECT_EQ(errorOf("{{ raise_exception('Roles must alternate!') }}"),
            "t.jinja:1:4: the template raised an error: Roles must alternate!");
  EXPECT_EQ(errorOf("{{ x.y }}"), "t.jinja:1:5: 'x' is undefined");
  // An error quotes a name briefly, on one line.
  std::string longName(5000, 'n');
  std::string e = errorOf("{{ " + longName + ".y }}");
  EXPECT_LT(e.size(), 600u);
  EXPECT_EQ(e.substr(0, 18), "t.jinja:1:5004: 'n");
  EXPECT_EQ(e.substr(e.size() - 3), "...");
  // A name with a newline (a dict key) stays on the line (fuzz finding).
  EXPECT_EQ(errorOf("{{ {}['a\nb'].c }}"), "t.jinja:2:4: 'a\\nb' is undefined");
  EXPECT_EQ(errorOf("{{ x + 'a' }}"), "t.jinja:1:6: 'x' is undefined");
  EXPECT_EQ(errorOf("{{ 'a' + 1 }}"), "t.jinja:1:8: unsupported operand types for +: 'str' and 'int'");
  EXPECT_EQ(errorOf("{{ 1 // 0 }}"), "t.jinja:1:6: integer division or modulo by zero");
  EXPECT_EQ(errorOf("{% for x in 3 %}{% endfor %}"), "t.jinja:1:13: 'int' object is not iterable");
}

TEST(JinjaErrors, RendersAreBounded) {
  jinja::Limits small;
  small.maxSteps = 100000;
  small.maxStringBytes = 1 << 20;
  // A loop that would run 10^12 times.
  EXPECT_NE(errorOf("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}"
                    "{% endfor %}",
                    ojson::object(), small)
                .find("steps (a runaway loop?)"),
            std::string::npos);
  // A string doubled past the limit.
  EXPECT_NE(errorOf("{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
                    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                    ojson::object(), small)
                .find("a string longer than 1048576 bytes"),
            std::string::npos);
  EXPECT_EQ(renderText("{{ '' * 9223372036854775807 }}|{{ [] * 9223372036854775807 }}|"
                       "{{ 'abc'[2::9223372036854775807] }}|{{ 'abc'[0::-9223372036854775807] }}"),
            "|[]|c|a");
  EXPECT_EQ(errorOf("{{ 'ab' * 10000000 }}", ojson::object(), small),
            "t.jinja:1:9: a string longer than 1048576 bytes");
  // Unbounded recursion of a macro.
  EXPECT_NE(errorOf("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find(
                "nesting deeper than 200 (runaway recursion?)"),
            std::string::npos);
  // Nesting in the text of the template itself.
  EXPECT_EQ(errorOf("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}"),
            "t.jinja:1:54: nesting deeper than 100");
  EXPECT_EQ(errorOf("{{ range(100000000)|length }}", ojson::object(), small),
            "t.jinja:1:4: range() of more than 1048576 items");
  EXPECT_EQ(errorOf("{{ 9223372036854775807 + 1 }}"),
            "t.jinja:1:24: integer overflow (64-bit integers only)");
  // A chain the parser builds without recursion (its tree would not).
  std::string chain = "{{ x";
  for (int k = 0; k < 300; ++k)
    chain += ".a";
  EXPECT_EQ(errorOf(chain + " }}"), "t.jinja:1:513: an expression nested deeper than 256");
  // Values nested by a loop; shared elements whose ==, repr and tojson
  // would take 2^40 steps or bytes; a namespace that would reach itself.
  EXPECT_EQ(errorOf("{% set ns = namespace(a=[]) %}{% for i in range(600) %}{% set ns.a = [ns.a] %}"
                    "{% endfor %}",
                    ojson::object(), small),
            "t.jinja:1:70: lists or dicts nested deeper than 512");
  const std::string shared = "{% set ns = namespace(a=[1]) %}{% for i in range(40) %}"
                             "{% set ns.a = [ns.a, ns.a] %}{% endfor %}";
  EXPECT_NE(errorOf(shared + "{{ ns.a == ns.a }}", ojson::object(), small).find("steps"),
            std::string::npos);
  EXPECT_EQ(errorOf(shared + "{{ ns.a }}", ojson::object(), small),
            "t.jinja:1:102: a string longer than 1048576 bytes");
  EXPECT_NE(errorOf(shared + "{{ ns.a|tojson }}", ojson::object(), small)
                .find("a string longer than 1048576 bytes"),
            std::string::npos);
  EXPECT_EQ(errorOf("{% set ns = namespace() %}{% set ns.me = [ns] %}"),
            "t.jinja:1:27: a namespace or a function (or a list or dict holding one) as a "
            "namespace's attribute is not supported");
}

//===-- tokenizer_config.json and --chat-template files --------------------===//

struct TempDir {
  fs::path p;
  TempDir() {
    static int n = 0;
    p = fs::temp_directory_path() /
        ("swift-chat-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::create_directories(p);
  }
  ~TempDir() { fs::remove_all(p); }
  std::string write(const std::string &name, const std::string &text) const {
    std::ofstream(p / name) << text;
    return (p / name).string();
  }
};

TEST(ChatTemplate, ConfigFormsAndTemplateFiles) {
  TempDir dir;
  // AddedToken objects, the list-of-templates form, JSON text directly.
  std::string cfg = dir.write(
      "tokenizer_config.json",
      R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null,
          "chat_template": [{"name": "tool_use", "template": "T"},
                            {"name": "default", "template": "{{ bos_token }}{{ pad_token is defined }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"}]})");
  ChatTemplate t = ChatTemplate::fromTokenizerConfig(cfg);
  nlohmann::json msgs = {{{"role", "user"}, {"content", "hi"}}};
  EXPECT_EQ(t.render(msgs, false).text, "<s>Falsehi</s>");
  EXPECT_EQ(t.bosToken(), "<s>");
  EXPECT_EQ(ChatTemplate::fromTokenizerConfig(R"({"chat_template": "{{ messages|length }}"})")
                .render(msgs, false)
                .text,
            "1");
  // --chat-template: a Jinja text file, or a .json file's chat_template;
  // the special tokens stay the model's.
  std::string jinjaFile = dir.write("t.jinja", "[{{ eos_token }}{{ add_generation_prompt }}]\n");
  EXPECT_EQ(ChatTemplate::fromFile(jinjaFile, t).render(msgs, true).text, "[</s>True]");
  std::string jsonFile = dir.write("other.json", R"({"chat_template": "J{{ bos_token }}"})");
  EXPECT_EQ(ChatTemplate::fromFile(jsonFile, t).render(msgs, true).text, "J<s>");
  // Errors name the file (and the template's line and column).
  std::string bad = dir.write("bad.jinja", "ok\n{% if %}");
  try {
    ChatTemplate::fromFile(bad, t);
    ADD_FAILURE() << "no error";
  } catch (const swift::plan::UserError &e) {
    EXPECT_EQ(std::string(e.what()), bad + ":2:7: unexpected the end of the '{%' tag in an expression");
  }
  // A chat_template.jinja next to tokenizer_config.json is the template.
  {
    TempDir sub;
    std::string c = sub.write("tokenizer_config.json",
                              R"({"eos_token": "</s>", "chat_template": "from config"})");
    EXPECT_EQ(ChatTemplate::fromTokenizerConfig(c).render(msgs, false).text, "from config");
    sub.write("chat_template.jinja", "from file {{ eos_token }}\n");
    EXPECT_EQ(ChatTemplate::fromTokenizerConfig(c).render(msgs, false).text, "from file </s>");
  }
  std::string none = dir.write("nochat.json", R"({"eos_token": "</s>"})");
  try {
    ChatTemplate::fromTokenizerConfig(none);
    ADD_FAILURE() << "no error";
  } catch (const swift::plan::UserError &e) {
    EXPECT_EQ(std::string(e.what()),
              none + ": has no chat_template; pass --chat-template FILE (docs/runtime.md, Chat "
                     "templates)");
  }
  EXPECT_EQ(ChatTemplate::specialTokensOf(none).eosToken(), "</s>");
  std::string badToken = dir.write("badtok.json", R"({"eos_token": 3, "chat_template": "x"})");
  try {
    ChatTemplate::fromTokenizerConfig(badToken);
    ADD_FAILURE() << "no error";
  } catch (const swift::plan::UserError &e) {
    EXPECT_NE(std::string(e.what()).find("eos_token"), std::string::npos) << e.what();
  }
  try {
    ChatTemplate::fromFile((dir.p / "missing.jinja").string(), t);
    ADD_FAILURE() << "no error";
  } catch (const swift::plan::UserError &e) {
    EXPECT_NE(std::string(e.what()).find("missing.jinja"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, StrftimeNowAndExtraContext) {
  char year[8];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(year, sizeof year, "%Y", &tm);
  EXPECT_EQ(renderText("{{ strftime_now('%Y') }}"), year);
  ChatTemplate t = ChatTemplate::fromTokenizerConfig(configOf("qwen3"));
  nlohmann::json msgs = {{{"role", "user"}, {"content", "x"}}};
  EXPECT_EQ(t.render(msgs, true, {{"enable_thinking", false}}).text,
            "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplate, RenderFromManyThreads) {
  ChatTemplate t = ChatTemplate::fromTokenizerConfig(configOf("qwen3"));
  auto convs = readJsonl(kData + "/conversations.jsonl");
  std::vector<std::string> want;
  for (auto &c : convs)
    want.push_back(t.renderOrdered(c["messages"], c["add_generation_prompt"].get<bool>(), c["extra"]).text);
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (size_t i = 0; i < convs.size(); ++i) {
        auto &c = convs[(i * 7 + k) % convs.size()];
        bad[k] += t.renderOrdered(c["messages"], c["add_generation_prompt"].get<bool>(), c["extra"])
                      .text != want[(i * 7 + k) % convs.size()];
      }
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

} // namespace
