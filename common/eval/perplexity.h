#pragma once
/// \file
/// \brief Perplexity and bits-per-byte of a language model over a text of documents.
///
/// Each document is scored on its own: its tokens `d0 … dn-1` (tokenizer output, no BOS) are
/// predicted after a BOS, and the model's logits give `NLL = Σ -ln p(d_i | context)` in nats.
///
///     perplexity    = exp(NLL / tokens)                tokens = predicted tokens d_i
///     bits-per-byte = NLL / ln 2 / bytes               bytes  = UTF-8 bytes of the documents
///
/// `bytes` counts every byte of every document's text exactly as split from the file —
/// delimiters excluded, nothing trimmed, BOS/EOS contributing none — so bits-per-byte compares
/// models with different tokenizers on the same bytes, while perplexity does not.
///
/// **Windows.** A model sees at most `window` = W positions (BOS included), so a document of
/// more than W - 1 tokens is scored in several forward passes, each starting from a fresh BOS
/// (the only start a model trained on BOS-prefixed stories knows). The first window scores as
/// many tokens as fit; each later one scores the next `stride` = S tokens (fewer at the end of
/// the document) and fills its other positions with the tokens just before them as context:
///
///     window 1:  BOS d0 … d(W-2)                        scores all W-1 tokens
///     window k:  BOS [W-1-S context tokens] [S new]     scores the S new tokens only
///     last:      BOS [context up to W-1 in all] [rest]  scores the rest
///
/// With the default S = W - 1 the windows do not overlap (except the backfilled last one):
/// cheapest, but the first token of every later window is predicted from BOS alone, so NLL is
/// *higher* than with unlimited context. A smaller S gives every scored token at least
/// W - 1 - S tokens of context, for about (W-1)/S times the compute (Hugging Face's "strided
/// perplexity"). Documents that fit in one window are scored exactly either way.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/eval/documents.h"
#include "common/model.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve::eval {

/// \brief A model as the evaluator sees it: the logits (T, vocab) row-major for a sequence of
/// T tokens starting at position 0 of an empty context (row t predicts the token after t).
using LogitsFn = std::function<std::vector<float>(const std::vector<int>& tokens)>;

/// \brief `LogitsFn` of the CPU oracle (`oracle::forward_prompt`); keeps a reference to `model`.
LogitsFn oracle_logits(const Model& model);

/// \brief How to split and score the text.
struct EvalOptions {
  std::string delimiter{kDefaultDelimiter};  ///< separator between documents
  int window = 512;    ///< most positions per forward pass, BOS included (>= 2)
  int stride = 0;      ///< new tokens scored per window after the first; 0 = window - 1
  bool score_eos = false;  ///< also predict EOS after each document (adds tokens, not bytes)
  /// \brief Called after each document with (documents done, documents total); may be empty.
  std::function<void(int64_t done, int64_t total)> progress;
};

/// \brief What an evaluation measured.
struct EvalResult {
  int64_t documents = 0;  ///< documents scored
  int64_t windows = 0;    ///< forward passes made
  int64_t tokens = 0;     ///< tokens predicted (BOS never; EOS when `score_eos`)
  int64_t bytes = 0;      ///< UTF-8 bytes of the documents' text
  double nll = 0;         ///< summed negative log-likelihood, nats
  double perplexity = 0;  ///< exp(nll / tokens)
  double bits_per_byte = 0;  ///< nll / ln 2 / bytes
};

/// \brief Scores every document of `text`. Throws `InvalidArgument` for bad options, a text
/// with no document (empty, or only delimiters), a document that tokenizes to nothing, or logits of the wrong size or containing NaN; whatever
/// `logits` throws (e.g. a window longer than the model's context) propagates.
EvalResult evaluate_text(std::string_view text, const Tokenizer& tokenizer,
                         const LogitsFn& logits, const EvalOptions& options);

/// \brief `evaluate_text` on the contents of the file at `path` (`LoadError` if it is
/// unreadable, not a regular file, or holds no document).
EvalResult evaluate_file(const std::string& path, const Tokenizer& tokenizer,
                         const LogitsFn& logits, const EvalOptions& options);

}  // namespace nanoserve::eval
