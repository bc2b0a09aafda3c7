// Encode speed on long inputs. llama2.c's merge loop is O(n²) in the number of tokens
// (a 166 KB text, ~78k initial symbols, would take minutes); the heap keeps it O(n log n).
// The bound below is ~100× what this takes on a 2-core CI box, so it only catches a
// complexity regression, never normal noise. Measured throughput is printed.

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "common/tokenizer/load_tokenizer.h"
#include "test_support.h"
#include "tokenizer_test_support.h"

namespace nanoserve {
namespace {

constexpr double kMaxSecondsPerEncode = 5.0;

double encode_seconds(const Tokenizer& tok, const std::string& text, size_t* n_tokens) {
  const auto t0 = std::chrono::steady_clock::now();
  *n_tokens = tok.encode(text, true, false).size();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(TokenizerSpeed, EncodesLongTextsInNearLinearTime) {
  NANOSERVE_REQUIRE_DATA(sample_path, "tinystories_valid_sample.txt");
  const std::string sample = testing::read_text(sample_path);
  const std::string two_samples = sample + sample;     // ~166 KB, one text
  const std::string one_run(100 * 1024, 'a');           // a single 100 KB "word"
  const std::pair<const char*, int> tokenizers[] = {
      {"tok512.bin", 512}, {"tokenizer.bin", 32000}, {"tinystories-656k/tokenizer.json", 2048}};
  for (const auto& [name, size] : tokenizers) {
    NANOSERVE_REQUIRE_DATA(path, name);
    const auto tok = load_tokenizer(path, size);
    for (const std::string* text : {&two_samples, &one_run}) {
      size_t n = 0;
      const double s = encode_seconds(*tok, *text, &n);
      std::cout << "[ speed    ] " << name << ": " << text->size() / 1024 << " KB -> " << n
                << " tokens in " << s * 1e3 << " ms (" << n / s / 1e6 << " M tokens/s, "
                << text->size() / s / 1e6 << " MB/s)\n";
      EXPECT_LT(s, kMaxSecondsPerEncode) << name;
    }
  }
}

}  // namespace
}  // namespace nanoserve
