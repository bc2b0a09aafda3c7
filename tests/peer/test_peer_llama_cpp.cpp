// llama.cpp as a peer (label `peer`): the npm package node-llama-cpp (prebuilt CPU llama.cpp,
// pinned in peers/package-lock.json) runs the same GGUF files as nanoserve's oracle, through
// peers/llama_cpp_greedy.mjs, and both must choose the same greedy tokens with next-token
// probabilities within tolerance: stories260K (a trained model), the synthetic Llama that
// llama.cpp itself quantized (tests/data/gguf_llama_cpp/), and files written by nanoserve convert
// and nanoserve quantize (Q8_0, Q4_0 from GPTQ, Q4_K). Skipped, with a message, when node
// or the npm packages are not installed (`cd peers && npm ci --ignore-scripts --omit=optional`).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/data_path.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_export.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_vocabulary.h"
#include "common/loaders/synthetic_model.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/oracle/kv_store.h"
#include "common/quant/quant_gguf.h"
#include "common/quant/quantize_model.h"
#include "common/tolerances.h"
#include "test_support.h"

namespace nanoserve {
namespace {

namespace fs = std::filesystem;

const std::string kRoot = NANOSERVE_SOURCE_DIR;

/// Why llama.cpp cannot run here, or "" when it can.
std::string missing_peer() {
  if (std::system("node --version > /dev/null 2>&1") != 0) return "node is not installed";
  if (!fs::exists(kRoot + "/peers/node_modules/node-llama-cpp/package.json") ||
      !fs::exists(kRoot + "/peers/node_modules/@node-llama-cpp/linux-x64/package.json")) {
    return "npm packages missing: cd peers && npm ci --ignore-scripts --omit=optional";
  }
  return "";
}

#define NANOSERVE_REQUIRE_PEER()                               \
  do {                                                         \
    const std::string why = missing_peer();                    \
    if (!why.empty()) GTEST_SKIP() << "llama.cpp peer: " << why; \
  } while (0)

/// Runs the node script; its JSON output.
nlohmann::json llama_cpp_greedy(const std::string& model, int steps, const std::vector<int>& prompt) {
  std::string cmd = "node '" + kRoot + "/peers/llama_cpp_greedy.mjs' '" + model + "' " +
                    std::to_string(steps);
  for (int t : prompt) cmd += " " + std::to_string(t);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 65536> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  return nlohmann::json::parse(out);
}

/// Softmax of one row of logits, in double.
std::vector<double> softmax(const std::vector<float>& logits) {
  double mx = logits[0], sum = 0.0;
  for (float l : logits) mx = std::max(mx, double(l));
  std::vector<double> p(logits.size());
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(double(logits[i]) - mx);
  for (double& x : p) x /= sum;
  return p;
}

/// Greedy steps of the oracle and llama.cpp from `prompt`: probabilities within `atol`, and the
/// same token at every step whose top two probabilities are more than 2·atol apart (at least
/// `min_decisive` such steps). Returns the largest probability difference.
double compare(const std::string& path, int steps, const std::vector<int>& prompt, double atol,
               int min_decisive) {
  const Model m = load_gguf(path);
  const nlohmann::json peer = llama_cpp_greedy(path, steps, prompt);
  oracle::KVStore kv(m.config, int(prompt.size()) + steps);
  std::vector<float> logits = oracle::forward_prompt(m, kv, prompt, 0);
  logits.erase(logits.begin(), logits.end() - m.config.vocab_size);  // the last row
  double worst = 0.0;
  int decisive = 0;
  for (int s = 0; s < steps; ++s) {
    const std::vector<double> p = softmax(logits);
    const int mine = int(std::max_element(p.begin(), p.end()) - p.begin());
    const int theirs = peer["tokens"][size_t(s)].get<int>();
    // Greedy choices must agree unless the top two are closer than the probabilities may
    // differ (a near tie, which a random synthetic model has often); both continue with
    // llama.cpp's token either way.
    std::vector<double> sorted = p;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<double>());
    if (sorted[0] - sorted[1] > 2 * atol) {
      EXPECT_EQ(mine, theirs) << path << " step " << s;
      ++decisive;
    }
    const nlohmann::json& q = peer["probs"][size_t(s)];
    EXPECT_EQ(q.size(), p.size());
    for (size_t i = 0; i < p.size() && i < q.size(); ++i) {
      worst = std::max(worst, std::fabs(p[i] - q[i].get<double>()));
    }
    logits = oracle::forward_token(m, kv, theirs, int(prompt.size()) + s);
  }
  EXPECT_LE(worst, atol) << path;
  EXPECT_GE(decisive, min_decisive) << path << ": too few steps with a clear greedy choice";
  std::printf("[ peer     ] %s: %d of %d steps with a clear greedy choice, all equal; max |p - "
              "p_llama.cpp| = %.3g\n",
              fs::path(path).filename().c_str(), decisive, steps, worst);
  return worst;
}

TEST(PeerLlamaCpp, Stories260KGreedyTokensAndProbabilitiesMatch) {
  NANOSERVE_REQUIRE_PEER();
  const std::optional<std::string> path = find_data_file("stories260K.gguf");
  if (!path) GTEST_SKIP() << "stories260K.gguf not found; set NANOSERVE_DATA";
  compare(*path, 16, {1}, tol::kPeerLlamaCppFp32Probs.atol, 16);  // a trained model: every step is decisive
}

// GGUF files written by nanoserve convert (common/loaders/gguf_export.h): llama.cpp loads them
// and chooses the same greedy tokens as nanoserve on the same file. From the llama2.c .bin (the
// vocabulary and weights as llama.cpp's own converter wrote stories260K.gguf) and from the
// Hugging Face TinyStories-656K (wq/wk permuted to adjacent pairs, tokenizer.json as a "llama"
// vocabulary), in fp32 and q8_0.
TEST(PeerLlamaCpp, FilesWrittenByNanoserveConvertRunTheSameInLlamaCpp) {
  NANOSERVE_REQUIRE_PEER();
  const std::pair<const char*, int> sources[] = {{"stories260K.bin", 1}, {"tinystories-656k", 1}};
  for (const auto& [name, bos] : sources) {
    const std::optional<std::string> src = find_data_file(name);
    if (!src) GTEST_SKIP() << name << " not found; set NANOSERVE_DATA";
    const ModelBundle b = load_model_bundle(*src);
    const GgufVocabulary v = gguf_vocabulary_of(*b.tokenizer, b.model.config.vocab_size, "", *src);
    for (uint32_t type : {kGgmlTypeF32, kGgmlTypeQ8_0}) {
      const std::string path = testing::write_temp_file(
          std::string(name) + (type == kGgmlTypeF32 ? ".f32" : ".q8_0") + ".gguf",
          export_gguf(b.model, v, type));
      // q8_0: llama.cpp also quantizes the activations to 8 bits, the oracle does not.
      compare(path, 16, {bos},
              type == kGgmlTypeF32 ? tol::kPeerLlamaCppFp32Probs.atol
                                   : tol::kPeerLlamaCppConvertedQ8Probs.atol,
              type == kGgmlTypeF32 ? 16 : 8);
    }
  }
}

/// `count` calibration sequences of `length` ids in [3, vocab) (a fixed pattern, no BOS).
std::vector<std::vector<int>> pattern_sequences(int count, int length, int vocab) {
  std::vector<std::vector<int>> seqs(size_t(count), std::vector<int>(size_t(length), 0));
  for (int s = 0; s < count; ++s) {
    for (int t = 0; t < length; ++t) seqs[size_t(s)][size_t(t)] = 3 + (37 * s + 11 * t * t) % (vocab - 3);
  }
  return seqs;
}

/// `model` quantized by `method` into the int4/int8 group-32 grid GGUF stores losslessly.
quant::QuantizedModel quantized(const Model& model, quant::QuantMethod method, int bits) {
  quant::QuantizeOptions o;
  o.method = method;
  o.scheme = quant::QuantScheme{bits, 32, true};
  return quant::quantize_model(model, pattern_sequences(4, 32, model.config.vocab_size), o);
}

// GGUF files written by nanoserve quantize (common/quant/quant_gguf.h): llama.cpp loads them
// and chooses the same greedy tokens as nanoserve's oracle on the same file. TinyStories-656K (a
// trained Hugging Face llama, wq/wk permuted) as GPTQ int4 -> Q4_0 and RTN int8 -> Q8_0; and the
// synthetic model of tests/data/gguf_llama_cpp (rows of 256, stories260K's vocabulary) as
// GPTQ -> Q4_0 and Q4_K (ggml's quantizer in nanoserve).
TEST(PeerLlamaCpp, FilesWrittenByNanoserveQuantizeRunTheSameInLlamaCpp) {
  NANOSERVE_REQUIRE_PEER();
  const std::optional<std::string> hf = find_data_file("tinystories-656k");
  const std::optional<std::string> stories = find_data_file("stories260K.gguf");
  if (!hf || !stories) GTEST_SKIP() << "tinystories-656k / stories260K.gguf not found; set NANOSERVE_DATA";
  const ModelBundle b = load_model_bundle(*hf);
  const GgufVocabulary v = gguf_vocabulary_of(*b.tokenizer, b.model.config.vocab_size, "", *hf);
  for (const auto& [method, bits] : {std::pair{quant::QuantMethod::kGptq, 4}, {quant::QuantMethod::kRtn, 8}}) {
    const std::string path = testing::write_temp_file(
        std::string("tinystories-656k.") + quant::to_string(method) + (bits == 4 ? ".q4_0.gguf" : ".q8_0.gguf"),
        quant::export_quantized_gguf(quantized(b.model, method, bits), v));
    // As for convert's Q8_0: llama.cpp also rounds the activations to 8 bits.
    compare(path, 16, {1}, tol::kPeerLlamaCppConvertedQ8Probs.atol, 8);
  }
  // peers/write_synthetic_gguf.cpp's shapes: every row a multiple of 256.
  const GgufVocabulary sv = load_gguf_vocabulary(*stories);
  ModelConfig c;
  c.name = "synthetic-k256";
  c.dim = 256;
  c.hidden_dim = 512;
  c.n_layers = 1;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.vocab_size = int(sv.tokens.size());
  c.max_seq_len = 256;
  c.tied_classifier = false;
  const Model m = make_synthetic_model(c, 2026);
  const std::string q4_0 = testing::write_temp_file(
      "synthetic.gptq.q4_0.gguf",
      quant::export_quantized_gguf(quantized(m, quant::QuantMethod::kGptq, 4), sv));
  const std::string q4_k = testing::write_temp_file("synthetic.q4_k.gguf", quant::export_q4_k_gguf(m, sv));
  for (const std::string& path : {q4_0, q4_k}) {
    compare(path, 8, {1, 300, 42, 7}, tol::kPeerLlamaCppQuantizedProbs.atol, 1);
  }
}

class PeerLlamaCppQuantized : public ::testing::TestWithParam<std::string> {};

TEST_P(PeerLlamaCppQuantized, LlamaCppQuantizedFilesRunTheSameInBoth) {
  // llama.cpp multiplies quantized weights with activations quantized to 8 bits, nanoserve's
  // oracle with the dequantized fp32 weights: the probabilities differ by that rounding.
  NANOSERVE_REQUIRE_PEER();
  compare(kRoot + "/tests/data/gguf_llama_cpp/synthetic-" + GetParam() + ".gguf", 8,
          {1, 300, 42, 7}, tol::kPeerLlamaCppQuantizedProbs.atol, 1);
}

INSTANTIATE_TEST_SUITE_P(Types, PeerLlamaCppQuantized,
                         ::testing::Values("Q4_0", "Q8_0", "Q4_K_M", "Q5_K_M", "Q6_K"));

}  // namespace
}  // namespace nanoserve
