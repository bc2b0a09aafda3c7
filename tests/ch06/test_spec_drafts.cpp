// The draft factory's names: what each one builds, and a clear error for anything else.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chapters/ch06_speculative_decoding/draft_factory.h"
#include "common/error.h"

namespace nanoserve::ch06 {
namespace {

TEST(Ch06SpecDrafts, NamesParseToTheirKindAndScheme) {
  const DraftSpec layers = parse_draft_spec("layers-3");
  EXPECT_EQ(layers.kind, DraftKind::kLayerTruncated);
  EXPECT_EQ(layers.layers, 3);
  const DraftSpec int8 = parse_draft_spec("int8-rtn");
  EXPECT_EQ(int8.kind, DraftKind::kQuantized);
  EXPECT_EQ(int8.quant.scheme.bits, 8);
  EXPECT_EQ(int8.quant.scheme.group_size, 0);  // per channel
  const DraftSpec gptq = parse_draft_spec("int4-gptq");
  EXPECT_EQ(gptq.quant.scheme.bits, 4);
  EXPECT_EQ(gptq.quant.scheme.group_size, 32);
  EXPECT_EQ(gptq.quant.method, quant::QuantMethod::kGptq);
  EXPECT_EQ(parse_draft_spec("int4-awq").quant.method, quant::QuantMethod::kAwq);
  EXPECT_EQ(parse_draft_spec("ngram").kind, DraftKind::kNgram);
}

TEST(Ch06SpecDrafts, UnknownNamesAreRefusedWithTheAcceptedForms) {
  for (const char* bad : {"", "layers-", "layers-0", "layers-x", "int4-foo", "int2-rtn", "fp8"}) {
    try {
      parse_draft_spec(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("expected layers-K"), std::string::npos) << e.what();
    }
  }
}

TEST(Ch06SpecDrafts, DefaultDraftsCoverEveryKindWithoutDuplicates) {
  EXPECT_EQ(default_draft_names(5),
            (std::vector<std::string>{"layers-1", "layers-2", "layers-4", "int8-rtn", "int4-rtn",
                                      "int4-gptq", "int4-awq", "ngram"}));
  EXPECT_EQ(default_draft_names(2),
            (std::vector<std::string>{"layers-1", "int8-rtn", "int4-rtn", "int4-gptq",
                                      "int4-awq", "ngram"}));
}

}  // namespace
}  // namespace nanoserve::ch06
