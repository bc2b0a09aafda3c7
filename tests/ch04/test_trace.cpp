// JSONL traces: a round trip through the writer and loader, and one clear LoadError (file:line
// and field) for each kind of bad line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/harness/trace.h"
#include "common/harness/workload.h"
#include "common/error.h"
#include "test_support.h"

namespace nanoserve {
namespace {

std::string write_text(const std::string& name, const std::string& text) {
  return testing::write_temp_file(name, std::vector<uint8_t>(text.begin(), text.end()));
}

/// The LoadError `load_trace` throws for a file with `text`, as "file-suffix|field|message".
std::string load_error(const std::string& text) {
  const std::string path = write_text("bad_trace.jsonl", text);
  try {
    harness::load_trace(path);
  } catch (const LoadError& e) {
    const std::string file = e.file().substr(e.file().rfind('/') + 1);
    return file + "|" + e.field() + "|" + e.what();
  }
  return "no error";
}

const std::string kGood = R"({"arrival_s": 0, "prompt_len": 4, "max_tokens": 2, "seed": 1})";

TEST(Ch04Trace, WriterAndLoaderRoundTripEveryField) {
  harness::WorkloadSpec spec;
  spec.num_requests = 30;
  spec.rate = 7;
  spec.prompt_len = harness::LengthDist::log_normal(20, 1, 1, 200);
  spec.max_tokens = harness::LengthDist::uniform(1, 64);
  std::vector<harness::TraceRequest> requests = harness::generate_workload(spec);
  requests[3].prompt_len = 0;
  requests[3].prompt = "Once upon a time, \"quoted\"\n";
  requests[5].temperature = 0.8f;
  requests[6].seed = 18446744073709551615ull;  // 2^64 - 1
  const std::string path = ::nanoserve::testing::temp_dir() + "round_trip.jsonl";
  harness::write_trace(path, requests);
  EXPECT_EQ(harness::load_trace(path), requests);
}

TEST(Ch04Trace, WriterUsesTheDocumentedKeysInOrder) {
  harness::TraceRequest r;
  r.arrival_s = 0.25;
  r.prompt_len = 3;
  r.max_tokens = 8;
  r.seed = 5;
  r.temperature = 0.8f;
  const std::string path = ::nanoserve::testing::temp_dir() + "one.jsonl";
  harness::write_trace(path, {r});
  const std::vector<uint8_t> bytes = testing::read_bytes(path);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()),
            "{\"arrival_s\":0.25,\"prompt_len\":3,\"max_tokens\":8,\"seed\":5,"
            "\"temperature\":0.8}\n");
}

TEST(Ch04Trace, BlankLinesAreSkippedAndLineNumbersStayTrue) {
  const std::string path = write_text("blank.jsonl", "\n" + kGood + "\n   \n" + kGood + "\n");
  EXPECT_EQ(harness::load_trace(path).size(), 2u);
  EXPECT_EQ(load_error(kGood + "\n\n{\"arrival_s\": 1}\n"),
            "bad_trace.jsonl:3|max_tokens|" + ::nanoserve::testing::temp_dir() +
                "bad_trace.jsonl:3: max_tokens: missing");
}

TEST(Ch04Trace, EachBadLineNamesItsLineAndField) {
  struct Case {
    std::string line, field, detail;
  };
  const std::vector<Case> cases = {
      {"not json", "json", "not valid JSON"},
      {"[1, 2]", "json", "must be a JSON object"},
      {R"({"arrival_s": 0, "max_tokens": 2, "seed": 1})", "prompt", "exactly one of"},
      {R"({"arrival_s": 0, "prompt": "x", "prompt_len": 3, "max_tokens": 2, "seed": 1})",
       "prompt", "exactly one of"},
      {R"({"arrival_s": 0, "prompt": "", "max_tokens": 2, "seed": 1})", "prompt", "empty"},
      {R"({"arrival_s": 0, "prompt": 7, "max_tokens": 2, "seed": 1})", "prompt", "a string"},
      {R"({"arrival_s": 0, "prompt_len": 0, "max_tokens": 2, "seed": 1})", "prompt_len",
       "got 0"},
      {R"({"arrival_s": 0, "prompt_len": 3.5, "max_tokens": 2, "seed": 1})", "prompt_len",
       "got 3.5"},
      {R"({"arrival_s": 0, "prompt_len": 2000000, "max_tokens": 2, "seed": 1})", "prompt_len",
       "[1, 1048576]"},
      {R"({"arrival_s": 0, "prompt_len": 3, "max_tokens": -2, "seed": 1})", "max_tokens",
       "got -2"},
      {R"({"arrival_s": 0, "prompt_len": 3, "max_tokens": 2, "seed": -1})", "seed", "got -1"},
      {R"({"arrival_s": 0, "prompt_len": 3, "max_tokens": 2, "seed": "1"})", "seed", "got \"1\""},
      {R"({"arrival_s": -1, "prompt_len": 3, "max_tokens": 2, "seed": 1})", "arrival_s",
       ">= 0"},
      {R"({"arrival_s": "soon", "prompt_len": 3, "max_tokens": 2, "seed": 1})", "arrival_s",
       "must be a number"},
      {R"({"arrival_s": 0, "prompt_len": 3, "max_tokens": 2, "seed": 1, "temperature": -0.5})",
       "temperature", ">= 0"},
      {R"({"arrival_s": 0, "prompt_len": 3, "max_token": 2, "seed": 1})", "max_token",
       "unknown field"},
  };
  for (const Case& c : cases) {
    const std::string got = load_error(kGood + "\n" + c.line + "\n");
    EXPECT_EQ(got.rfind("bad_trace.jsonl:2|" + c.field + "|", 0), 0u) << c.line << " -> " << got;
    EXPECT_NE(got.find(c.detail), std::string::npos) << c.line << " -> " << got;
  }
}

TEST(Ch04Trace, ArrivalsMustNotGoBackInTime) {
  const std::string got = load_error(
      R"({"arrival_s": 2, "prompt_len": 3, "max_tokens": 2, "seed": 1})"
      "\n"
      R"({"arrival_s": 1.5, "prompt_len": 3, "max_tokens": 2, "seed": 1})");
  EXPECT_EQ(got.rfind("bad_trace.jsonl:2|arrival_s|", 0), 0u) << got;
  EXPECT_NE(got.find("earlier than the previous line"), std::string::npos);
}

TEST(Ch04Trace, EmptyAndMissingFilesAreErrors) {
  EXPECT_NE(load_error("\n\n").find("holds no request"), std::string::npos);
  EXPECT_THROW(harness::load_trace(::nanoserve::testing::temp_dir() + "does_not_exist.jsonl"), LoadError);
}

TEST(Ch04Trace, WriterRefusesWhatTheLoaderWouldReject) {
  harness::TraceRequest r;
  r.prompt_len = 3;
  r.max_tokens = 0;
  EXPECT_THROW(harness::write_trace(::nanoserve::testing::temp_dir() + "x.jsonl", {r}), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
