#include "common/eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/oracle/forward.h"

namespace nanoserve::eval {

LogitsFn oracle_logits(const Model& model) {
  return [&model](const std::vector<int>& tokens) {
    return oracle::forward_prompt(model, tokens);
  };
}

namespace {

/// -ln softmax(row)[target] in fp64: logsumexp(row) - row[target].
double token_nll(const float* row, int vocab, int target) {
  double max = row[0];
  for (int i = 1; i < vocab; ++i) max = std::max(max, double(row[i]));
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(double(row[i]) - max);
  return max + std::log(sum) - double(row[target]);
}

/// Scores `doc` (BOS excluded) window by window; adds to `r`.
void score_document(const std::vector<int>& doc, int bos, const LogitsFn& logits_fn,
                    const EvalOptions& opt, EvalResult& r) {
  const int n = int(doc.size());
  const int span = opt.window - 1;  // document tokens that fit after the BOS
  const int stride = opt.stride == 0 ? span : opt.stride;
  int scored_end = 0;  // d[0 .. scored_end) are scored
  while (scored_end < n) {
    const int end = std::min(n, scored_end == 0 ? span : scored_end + stride);
    const int ctx = std::max(0, end - span);  // first document token in this window
    std::vector<int> window = {bos};          // (end - ctx + 1) = BOS + d[ctx .. end)
    window.insert(window.end(), doc.begin() + ctx, doc.begin() + end);
    const std::vector<float> logits = logits_fn(window);  // (window.size(), vocab)
    const int rows = int(window.size());
    if (logits.empty() || logits.size() % size_t(rows) != 0) {
      throw InvalidArgument("evaluate: logits hold " + std::to_string(logits.size()) +
                            " values for " + std::to_string(rows) + " tokens");
    }
    const int vocab = int(logits.size() / size_t(rows));
    for (int i = scored_end; i < end; ++i) {
      // Row j of the window holds the token before d[ctx + j]: row 0 is BOS.
      const float* row = logits.data() + size_t(i - ctx) * vocab;
      if (doc[i] < 0 || doc[i] >= vocab) {
        throw InvalidArgument("evaluate: token " + std::to_string(doc[i]) +
                              " is outside the model's vocabulary of " + std::to_string(vocab));
      }
      const double nll = token_nll(row, vocab, doc[i]);
      if (std::isnan(nll)) throw InvalidArgument("evaluate: logits contain NaN");
      r.nll += nll;
    }
    r.tokens += end - scored_end;
    ++r.windows;
    scored_end = end;
  }
}

}  // namespace

EvalResult evaluate_text(std::string_view text, const Tokenizer& tokenizer,
                         const LogitsFn& logits, const EvalOptions& options) {
  if (options.window < 2) {
    throw InvalidArgument("evaluate: window " + std::to_string(options.window) +
                          " must be >= 2 (BOS plus one token)");
  }
  if (options.stride < 0 || options.stride > options.window - 1) {
    throw InvalidArgument("evaluate: stride " + std::to_string(options.stride) +
                          " is outside [1, window - 1 = " + std::to_string(options.window - 1) +
                          "] (0 = window - 1)");
  }
  const std::vector<std::string_view> docs = split_documents(text, options.delimiter);
  if (docs.empty()) {  // nothing to score: a table of zeros would look like a result
    throw InvalidArgument("evaluate: the text (" + std::to_string(text.size()) +
                          " bytes) holds no document: it is empty or only delimiters");
  }
  EvalResult r;
  for (const std::string_view doc : docs) {
    // BOS is prepended per window by score_document, so encode without it.
    const std::vector<int> ids = tokenizer.encode(doc, /*add_bos=*/false, options.score_eos);
    if (ids.empty()) {
      throw InvalidArgument("evaluate: document " + std::to_string(r.documents) +
                            " (" + std::to_string(doc.size()) + " bytes) tokenizes to nothing");
    }
    score_document(ids, tokenizer.bos_id(), logits, options, r);
    r.bytes += int64_t(doc.size());
    ++r.documents;
    if (options.progress) options.progress(r.documents, int64_t(docs.size()));
  }
  if (r.tokens > 0) {
    r.perplexity = std::exp(r.nll / double(r.tokens));
    r.bits_per_byte = r.nll / std::log(2.0) / double(r.bytes);
  }
  return r;
}

EvalResult evaluate_file(const std::string& path, const Tokenizer& tokenizer,
                         const LogitsFn& logits, const EvalOptions& options) {
  const std::string text = read_text_file(path);
  if (split_documents(text, options.delimiter).empty()) {
    throw LoadError(path, "documents",
                    "none to evaluate: the file (" + std::to_string(text.size()) +
                        " bytes) is empty or holds only delimiters");
  }
  return evaluate_text(text, tokenizer, logits, options);
}

}  // namespace nanoserve::eval
