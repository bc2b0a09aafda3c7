// chat::Template against `@huggingface/jinja`: the Llama 3, Qwen2.5, SmolLM2, TinyLlama and
// Mistral templates of tests/data/chat_templates/ rendered on every conversation of cases.json
// (scripts/make_chat_template_fixtures.mjs) give exactly the reference's text, or fail where
// it failed; and the subset's own rules (whitespace control, scoping, errors) hold.

#include <gtest/gtest.h>

#include "common/chat/chat_template.h"
#include "common/chat/jinja.h"
#include "tokenizer_test_support.h"

namespace nanoserve::chat {
namespace {

TEST(ChatTemplate, EveryFamilyRendersLikeHuggingFaceJinja) {
  const auto fixture = testing::read_fixture("chat_templates/cases.json");
  int checked = 0;
  for (const auto& [family, spec] : fixture["families"].items()) {
    const std::string source = testing::read_text(testing::fixture_path("chat_templates/" + family + ".jinja"));
    // A null bos_token (Qwen2.5) renders as "" in both.
    const Template t(source);
    for (const auto& c : spec["cases"]) {
      nlohmann::json ctx = {{"messages", c["messages"]},
                            {"add_generation_prompt", c["add_generation_prompt"]},
                            {"bos_token", spec["bos_token"]},
                            {"eos_token", spec["eos_token"]}};
      SCOPED_TRACE(family + ": " + c["messages"].dump() + " add_generation_prompt=" +
                   c["add_generation_prompt"].dump());
      if (c.contains("error")) {
        try {
          t.render(Value::from_json(ctx));
          ADD_FAILURE() << "rendered; the reference raised " << c["error"];
        } catch (const TemplateError& e) {
          EXPECT_EQ(std::string(e.what()), c["error"].get<std::string>());
        }
      } else {
        EXPECT_EQ(t.render(Value::from_json(ctx)), c["output"].get<std::string>());
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5 * 18);
}

TEST(ChatTemplate, RendersMessagesWithGenerationPrompt) {
  const ChatTemplate t(testing::read_text(testing::fixture_path("chat_templates/smollm2.jinja")),
                       "<|im_start|>", "<|im_end|>");
  EXPECT_EQ(t.render({{"system", "S"}, {"user", "U"}}, true),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
}

std::string render(const std::string& source, const nlohmann::json& ctx = nlohmann::json::object()) {
  return Template(source).render(Value::from_json(ctx));
}

TEST(JinjaSubset, WhitespaceControlAndBlocks) {
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif %}\nc"), "abc");
  EXPECT_EQ(render("  {% if true %}\nx\n  {% endif %}\ny"), "x\ny");  // lstrip + trim blocks
  EXPECT_EQ(render("{{ 'a' }}\n{# c #}\nb\n"), "a\nb");                // trailing newline dropped
  EXPECT_EQ(render("{% for x in [1, 2, 3] if x != 2 %}{{ loop.index }}{{ x }}{% endfor %}"), "1123");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
}

TEST(JinjaSubset, ScopingNamespacesAndExpressions) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(3) %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}"
                   "{% endfor %}{{ ns.n }}"), "3");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 'ab' ~ 1 }} {{ 'x' if none else 'y' }}"),
            "3 -4 1 ab1 y");
  EXPECT_EQ(render("{{ '  a b  '.strip() }}|{{ 'abc'[1:] }}|{{ [1,2,3][-1] }}|{{ 'a,b'.split(',') }}"),
            "a b|bc|3|['a', 'b']");
  EXPECT_EQ(render("{{ m.content | trim }}{{ m.missing is defined }}{{ m.tools | default('d') }}",
                   {{"m", {{"content", " hi "}}}}), "hiFalsed");
  EXPECT_EQ(render("{{ {'a': [1, 'x', none, true]} | tojson }}"), R"({"a": [1, "x", null, true]})");
}

TEST(JinjaSubset, BadTemplatesFailWithTheLine) {
  for (const char* bad : {"{% if x %}", "{% endif %}", "{{ 1 +", "{% for %}", "{{ 'x }}", "{% macro m() %}{% endmacro %}",
                          "{{ x | nosuchfilter }}", "\n{% if %}", "{{ (((((((((((((((((((((((((((((("
                          "(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
                          "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1 }}"}) {
    try {
      render(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const TemplateError& e) {
      EXPECT_NE(std::string(e.what()).find("line "), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(render("{{ raise_exception('no') }}"), TemplateError);
  EXPECT_THROW(render("{% for i in range(2000000) %}{% endfor %}"), TemplateError);
  EXPECT_THROW(render("{% for i in range(1000) %}{% for j in range(1000) %}{{ 'xxxxxxxxxxxxxxxxxxxxxxxxx' }}"
                      "{% endfor %}{% endfor %}"), TemplateError);
}

}  // namespace
}  // namespace nanoserve::chat
