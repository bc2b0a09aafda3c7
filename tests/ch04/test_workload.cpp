// Workload generator: deterministic from its seed, Poisson arrivals with the asked rate,
// length distributions with their textbook moments, and trace lines turned into requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/harness/workload.h"
#include "common/error.h"
#include "common/tokenizer/byte_tokenizer.h"

namespace nanoserve {
namespace {

harness::WorkloadSpec spec(int n, double rate, harness::LengthDist prompt, harness::LengthDist out, uint64_t seed = 7) {
  harness::WorkloadSpec s;
  s.num_requests = n;
  s.rate = rate;
  s.prompt_len = prompt;
  s.max_tokens = out;
  s.seed = seed;
  return s;
}

std::vector<double> prompt_lengths(const std::vector<harness::TraceRequest>& w) {
  std::vector<double> v;
  for (const harness::TraceRequest& r : w) v.push_back(r.prompt_len);
  return v;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

TEST(Ch04Workload, SameSpecGivesTheSameWorkloadAndRequestIDoesNotDependOnTheCount) {
  const harness::WorkloadSpec a = spec(50, 5, harness::LengthDist::uniform(1, 100), harness::LengthDist::uniform(1, 50));
  EXPECT_EQ(harness::generate_workload(a), harness::generate_workload(a));
  harness::WorkloadSpec b = a;
  b.seed = 8;
  EXPECT_NE(harness::generate_workload(a), harness::generate_workload(b));
  harness::WorkloadSpec shorter = a;
  shorter.num_requests = 10;
  const std::vector<harness::TraceRequest> all = harness::generate_workload(a);
  EXPECT_EQ(harness::generate_workload(shorter), std::vector<harness::TraceRequest>(all.begin(), all.begin() + 10));
}

TEST(Ch04Workload, FixedLengthsAndArrivalsThatStartAtZeroAndNeverGoBack) {
  const auto w = harness::generate_workload(spec(200, 3, harness::LengthDist::fixed(17), harness::LengthDist::fixed(5)));
  EXPECT_EQ(w[0].arrival_s, 0.0);
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_EQ(w[i].prompt_len, 17);
    EXPECT_EQ(w[i].max_tokens, 5);
    EXPECT_TRUE(w[i].prompt.empty());
    if (i > 0) {
      EXPECT_GE(w[i].arrival_s, w[i - 1].arrival_s);
    }
  }
  const auto burst = harness::generate_workload(spec(5, std::numeric_limits<double>::infinity(),
                                            harness::LengthDist::fixed(1), harness::LengthDist::fixed(1)));
  for (const harness::TraceRequest& r : burst) EXPECT_EQ(r.arrival_s, 0.0);
}

TEST(Ch04Workload, PoissonGapsAreExponentialWithMeanOneOverRate) {
  const int n = 20000;
  const auto w = harness::generate_workload(spec(n, 10, harness::LengthDist::fixed(1), harness::LengthDist::fixed(1)));
  std::vector<double> gaps;
  for (size_t i = 1; i < w.size(); ++i) gaps.push_back(w[i].arrival_s - w[i - 1].arrival_s);
  const double m = mean(gaps);
  double var = 0;
  for (double g : gaps) var += (g - m) * (g - m);
  const double sd = std::sqrt(var / double(gaps.size() - 1));
  // Exp(10): mean 0.1 and sd 0.1 (coefficient of variation 1). The standard error of the
  // mean is 0.1 / sqrt(n) = 0.7%, so 3% is far outside chance.
  EXPECT_NEAR(m, 0.1, 0.003);
  EXPECT_NEAR(sd / m, 1.0, 0.05);
}

TEST(Ch04Workload, UniformLengthsCoverTheirRangeEvenly) {
  const auto w = harness::generate_workload(spec(20000, 1, harness::LengthDist::uniform(8, 24), harness::LengthDist::fixed(1)));
  const std::vector<double> len = prompt_lengths(w);
  EXPECT_EQ(*std::min_element(len.begin(), len.end()), 8);
  EXPECT_EQ(*std::max_element(len.begin(), len.end()), 24);
  EXPECT_NEAR(mean(len), 16.0, 0.2);  // sd 4.9 / sqrt(20000) = 0.035
}

TEST(Ch04Workload, LogNormalLengthsHaveTheirMedianAndALongTail) {
  const auto w = harness::generate_workload(
      spec(20000, 1, harness::LengthDist::log_normal(100, 1.0, 1, harness::kMaxTraceTokens), harness::LengthDist::fixed(1)));
  std::vector<double> len = prompt_lengths(w);
  std::sort(len.begin(), len.end());
  EXPECT_NEAR(len[len.size() / 2], 100.0, 4.0);            // median = exp(mu)
  EXPECT_NEAR(mean(len), 100.0 * std::exp(0.5), 5.0);      // mean = median * e^(sigma^2 / 2)
  EXPECT_GT(len[size_t(0.99 * double(len.size()))], 900.0);  // P99 = 100 e^2.326 ≈ 1024
  const auto capped = harness::generate_workload(
      spec(2000, 1, harness::LengthDist::log_normal(10, 2.0, 5, 20), harness::LengthDist::fixed(1)));
  const std::vector<double> c = prompt_lengths(capped);
  EXPECT_EQ(*std::min_element(c.begin(), c.end()), 5);
  EXPECT_EQ(*std::max_element(c.begin(), c.end()), 20);
}

TEST(Ch04Workload, BadSpecsNameTheField) {
  auto message = [](const harness::WorkloadSpec& s) {
    try {
      s.validate();
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  harness::WorkloadSpec s = spec(0, 1, harness::LengthDist::fixed(1), harness::LengthDist::fixed(1));
  EXPECT_NE(message(s).find("num_requests"), std::string::npos);
  s = spec(1, 0, harness::LengthDist::fixed(1), harness::LengthDist::fixed(1));
  EXPECT_NE(message(s).find("rate"), std::string::npos);
  s.rate = std::nan("");
  EXPECT_NE(message(s).find("rate"), std::string::npos);
  s = spec(1, 1, harness::LengthDist::uniform(9, 3), harness::LengthDist::fixed(1));
  EXPECT_NE(message(s).find("prompt_len.min"), std::string::npos);
  s = spec(1, 1, harness::LengthDist::fixed(1), harness::LengthDist::log_normal(0, 1, 1, 9));
  EXPECT_NE(message(s).find("max_tokens.median"), std::string::npos);
  s = spec(1, 1, harness::LengthDist::fixed(0), harness::LengthDist::fixed(1));
  EXPECT_NE(message(s).find("prompt_len.value"), std::string::npos);
}

TEST(Ch04Workload, DescribeNamesTheDistribution) {
  EXPECT_EQ(harness::LengthDist::fixed(64).describe(), "fixed(64)");
  EXPECT_EQ(harness::LengthDist::uniform(8, 128).describe(), "uniform(8, 128)");
  EXPECT_EQ(harness::LengthDist::log_normal(32, 1.5, 4, 256).describe(),
            "lognormal(median 32, sigma 1.5, [4, 256])");
}

TEST(Ch04Workload, SyntheticPromptsStartWithBosAndDependOnlyOnTheSeed) {
  const std::vector<int> a = harness::synthetic_prompt(50, 3, 17, 1);
  EXPECT_EQ(a.size(), 50u);
  EXPECT_EQ(a[0], 1);
  for (int t : a) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 17);
  }
  EXPECT_EQ(harness::synthetic_prompt(50, 3, 17, 1), a);
  EXPECT_NE(harness::synthetic_prompt(50, 4, 17, 1), a);
  EXPECT_EQ(harness::synthetic_prompt(1, 3, 17, 1), std::vector<int>{1});
  EXPECT_THROW(harness::synthetic_prompt(0, 3, 17), InvalidArgument);
  EXPECT_THROW(harness::synthetic_prompt(5, 3, 0), InvalidArgument);
}

TEST(Ch04Workload, MakeRequestsCarriesSeedsTemperaturesAndStopRules) {
  std::vector<harness::TraceRequest> trace(3);
  trace[0].prompt_len = 4;
  trace[0].max_tokens = 9;
  trace[0].seed = 11;
  trace[1].prompt = "hi";
  trace[1].max_tokens = 2;
  trace[1].seed = 12;
  trace[1].temperature = 0.0f;
  trace[1].arrival_s = 0.5;
  trace[2].prompt_len = 1;
  trace[2].seed = 13;
  harness::RequestDefaults d;
  d.vocab_size = 300;
  d.sampling.temperature = 0.7f;
  d.stop_token_ids = {2};
  const ByteTokenizer tok(300);
  d.tokenizer = &tok;
  const std::vector<engine::Request> r = harness::make_requests(trace, d);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].id(), 0);
  EXPECT_EQ(r[0].seq.token_ids, harness::synthetic_prompt(4, 11, 300));
  EXPECT_EQ(r[0].seq.sampling.seed, 11u);
  EXPECT_EQ(r[0].seq.sampling.temperature, 0.7f);
  EXPECT_EQ(r[0].max_tokens, 9);
  EXPECT_EQ(r[1].seq.token_ids, (std::vector<int>{1, 3 + 'h', 3 + 'i'}));  // BOS, bytes
  EXPECT_EQ(r[1].seq.sampling.temperature, 0.0f);
  EXPECT_EQ(r[1].arrival_s, 0.5);
  EXPECT_EQ(r[2].stop_token_ids, std::vector<int>{2});
  d.tokenizer = nullptr;
  EXPECT_THROW(harness::make_requests(trace, d), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
