#include "chapters/ch07_full_stack/stack_table.h"

#include <cstdio>
#include <map>

#include "common/cli/cost_device.h"
#include "common/data_path.h"
#include "common/engine/model/device_info.h"
#include "common/eval/documents.h"
#include "common/format_bytes.h"
#include "common/quant/quant_metrics.h"

namespace nanoserve::ch07 {

std::vector<StackConfig> stacked_rows(const StackTableOptions& o) {
  std::vector<StackConfig> rows;
  StackConfig c;
  c.paged = false;
  c.prefix_caching = false;
  if (o.static_row) {
    c.continuous = false;
    c.label = "static, contiguous KV";
    rows.push_back(c);
  }
  c.continuous = true;
  c.label = o.static_row ? "+ continuous batching" : "continuous, contiguous KV";
  rows.push_back(c);
  c.paged = true;
  c.prefix_caching = true;
  c.label = "+ paged KV, prefix cache";
  rows.push_back(c);
  for (std::size_t i = 0; i < o.quants.size(); ++i) {
    StackConfig q = c;
    q.quant = o.quants[i];
    q.label = "+ " + o.quants[i];
    rows.push_back(q);
  }
  if (o.spec != "none") {
    StackConfig s = c;
    if (!o.quants.empty()) s.quant = o.quants.front();
    s.spec = o.spec;
    s.gamma = o.gamma;
    s.label = "+ spec " + o.spec + " γ" + std::to_string(o.gamma);
    rows.push_back(s);
  }
  return rows;
}

std::vector<RowQuality> row_quality(const std::vector<StackRun>& runs, WeightsCache& weights,
                                    const ModelBundle& bundle,
                                    const std::vector<std::vector<int>>& kl_sequences,
                                    int eval_docs) {
  std::string text;
  const auto sample = find_data_file("tinystories_valid_sample.txt");
  if (sample && bundle.format != ModelFormat::kSynthetic && eval_docs > 0) {
    text = eval::read_text_file(*sample);
  }
  const Model& dense = weights.get("none").reference;
  std::map<std::string, RowQuality> by_weights;  // perplexity and KL per --quant value
  std::vector<RowQuality> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const StackRun& r = runs[i];
    const std::string& q = r.config.quant;
    if (by_weights.count(q) == 0) {
      RowQuality m;
      const Model& model = weights.get(q).reference;
      if (!text.empty()) {
        m.perplexity = quant::evaluate_documents(model, *bundle.tokenizer, text,
                                                 {quant::kEvaluationDocuments.first + 1, eval_docs})
                           .perplexity;
      }
      m.kl = q == "none" ? 0.0 : quant::mean_kl_divergence(dense, model, kl_sequences);
      by_weights[q] = m;
    }
    RowQuality m = by_weights[q];
    // Exactness: the first earlier row on the same weights; greedy tokens (and sampled ones
    // without speculation) must be the same request by request.
    for (std::size_t j = 0; j < i; ++j) {
      if (runs[j].config.quant != q) continue;
      std::size_t same = 0, n = std::min(runs[j].run.requests.size(), r.run.requests.size());
      for (std::size_t k = 0; k < n; ++k) {
        same += runs[j].run.requests[k].seq.token_ids == r.run.requests[k].seq.token_ids;
      }
      const bool sampled = !r.run.requests.empty() && !r.run.requests[0].seq.sampling.greedy();
      if (sampled && r.config.spec != "none") {
        m.tokens = "same distribution as row " + std::to_string(j + 1);
      } else if (same == r.run.requests.size()) {
        m.tokens = "= row " + std::to_string(j + 1);
      } else {  // fp16/bf16: logits differ in the last bits across batch shapes (near-ties)
        m.tokens = std::to_string(same) + "/" + std::to_string(r.run.requests.size()) + " = row " +
                   std::to_string(j + 1);
      }
      break;
    }
    if (m.tokens.empty()) m.tokens = q == "none" ? "reference" : "its own";
    out.push_back(m);
  }
  return out;
}

void print_stack(const std::vector<StackRun>& runs, const std::vector<RowQuality>& quality,
                 const roofline::Device& device) {
  std::printf("\n== the stacked gains: %s time of every pass (the article's table) ==\n",
              cli::modeled_label(device).c_str());
  std::printf("%-3s %-26s %9s %8s %8s %8s %8s %6s %6s %9s %7s %7s %s\n", "row", "technique",
              "out tok/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "KV eff", "KV tok",
              "weights", "ppl", "KL", "tokens");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const StackRun& r = runs[i];
    const harness::ServingMetrics& m = r.metrics;
    const RowQuality& q = quality[i];
    char ppl[16] = "-", kl[16] = "-";
    if (q.perplexity > 0) std::snprintf(ppl, sizeof ppl, "%.3f", q.perplexity);
    if (q.kl >= 0) std::snprintf(kl, sizeof kl, "%.4f", q.kl);
    std::printf("%-3zu %-26s %9.0f %8.3f %8.3f %8.4f %8.4f %5.0f%% %6d %9s %7s %7s %s\n", i + 1,
                r.config.label.c_str(), m.output_tokens_per_s, 1e3 * m.ttft.p50,
                1e3 * m.ttft.p99, 1e3 * m.tpot.p50, 1e3 * m.tpot.p99, 100 * r.kv_efficiency,
                r.kv_tokens, format_bytes(double(r.weight_bytes)).c_str(), ppl, kl,
                q.tokens.c_str());
  }
  std::printf("(times in ms, %s: the roofline model's time of every pass run here — not a "
              "measurement; KV eff = slots used / slots reserved, mean over passes; KV tok = the "
              "pool the memory budget leaves after the weights)\n",
              cli::modeled_label(device).c_str());

  std::printf("\n== the same runs, counted by the simulator (simulated: CPU work, not GPU speed) ==\n");
  std::printf("%-3s %-26s %7s %7s %7s %7s %7s %7s %6s %6s %9s %8s\n", "row", "technique", "passes",
              "rows", "drafts", "accept", "d.pass", "preempt", "swaps", "hits", "bytes", "CPU s");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const StackRun& r = runs[i];
    std::printf("%-3zu %-26s %7lld %7lld %7lld %7lld %7lld %7lld %6lld %6lld %9s %8.2f\n", i + 1,
                r.config.label.c_str(), r.passes, r.rows, r.run.num_draft_tokens,
                r.run.num_accepted_tokens, r.draft_passes, r.run.num_preemptions,
                r.run.num_swap_outs, r.metrics.prefix_hits,
                format_bytes(r.modeled_bytes).c_str(), r.cpu_seconds);
  }
  std::printf("(rows = rows computed, padding and draft rows included; drafts / accept = draft "
              "tokens verified / accepted; d.pass = draft-model passes; hits = prefix-cache "
              "blocks; bytes = what the modeled passes move)\n");
  if (std::string(engine::kernel_backend()) != "cuda") {
    std::printf("\n== measured on a GPU: not measured (this build runs the CPU simulator; "
                "scripts/gpu_check.sh runs the tour on a GPU) ==\n");
    return;
  }
  std::printf("\n== measured on %s: wall time of each whole run (host scheduling included) ==\n",
              engine::device_name().c_str());
  std::printf("%-3s %-26s %9s %9s\n", "row", "technique", "out tok/s", "wall s");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const StackRun& r = runs[i];
    std::printf("%-3zu %-26s %9.0f %9.3f\n", i + 1, r.config.label.c_str(),
                double(r.metrics.output_tokens) / r.wall_seconds, r.wall_seconds);
  }
}

nlohmann::json stack_records(const std::vector<StackRun>& runs,
                             const std::vector<RowQuality>& quality) {
  nlohmann::json records = nlohmann::json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const StackRun& r = runs[i];
    nlohmann::json rec = harness::metrics_record(r.config.label, r.metrics);
    rec["table"] = "stack";
    rec["row"] = i + 1;
    rec["continuous"] = r.config.continuous;
    rec["paged"] = r.config.paged;
    rec["prefix_caching"] = r.config.prefix_caching;
    rec["quant"] = r.config.quant;
    rec["spec"] = r.config.spec;
    rec["gamma"] = r.config.spec == "none" ? 0 : r.config.gamma;
    rec["weights"] = r.weights;
    rec["weight_bytes"] = r.weight_bytes;
    rec["kv_tokens"] = r.kv_tokens;
    rec["kv_efficiency"] = r.kv_efficiency;
    rec["evidence"] = "modeled";
    rec["passes"] = r.passes;
    rec["rows"] = r.rows;
    rec["draft_tokens"] = r.run.num_draft_tokens;
    rec["accepted_tokens"] = r.run.num_accepted_tokens;
    rec["draft_passes"] = r.draft_passes;
    rec["swap_outs"] = r.run.num_swap_outs;
    rec["modeled_bytes"] = r.modeled_bytes;
    rec["modeled_target_s"] = r.modeled_target_s;
    rec["modeled_draft_s"] = r.modeled_draft_s;
    rec["simulated_cpu_s"] = r.cpu_seconds;
    if (std::string(engine::kernel_backend()) == "cuda") {
      rec["measured_gpu"] = {{"device", engine::device_name()}, {"wall_s", r.wall_seconds},
                             {"output_tokens_per_s", double(r.metrics.output_tokens) / r.wall_seconds}};
    } else {
      rec["measured_gpu"] = nullptr;  // the simulator: nothing measured on a GPU
    }
    rec["perplexity"] = quality[i].perplexity > 0 ? nlohmann::json(quality[i].perplexity) : nullptr;
    rec["kl"] = quality[i].kl >= 0 ? nlohmann::json(quality[i].kl) : nullptr;
    rec["tokens"] = quality[i].tokens;
    records.push_back(rec);
  }
  return records;
}

}  // namespace nanoserve::ch07
