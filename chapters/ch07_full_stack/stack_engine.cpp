#include "chapters/ch07_full_stack/stack_engine.h"

#include <algorithm>
#include <optional>
#include <string>

#include "common/engine/serve/draft_model_drafter.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/static_batcher.h"
#include "common/error.h"
#include "common/harness/clocks.h"
#include "common/harness/modeled_executor.h"
#include "common/roofline/pass_cost.h"
#include "common/speculative/draft_models.h"

namespace nanoserve::ch07 {

namespace {

// The roofline precision of a run: its storage type, and INT8/INT4 linears when quantized.
roofline::Precision precision_of(const engine::WeightsSpec& spec, DType dtype) {
  roofline::Precision p = roofline::Precision::dense(dtype_bytes(dtype));
  if (spec.kind == engine::WeightsSpec::Kind::kQuantize) {
    const quant::QuantScheme& s = spec.options.scheme;
    p = roofline::Precision::weight_only(s.bits, s.group_size, !s.symmetric, p);
  } else if (spec.kind == engine::WeightsSpec::Kind::kFile) {
    p = roofline::Precision::weight_only(4, 32, false, p);  // the file's scheme is not parsed here
  }
  return p;
}

// The pass a plan describes, for the roofline: a verification's 1 + k rows each return logits,
// so they count as k + 1 one-row chunks (the classifier runs on each); the rest as
// harness::pass_shape does (padding rows of static batching included).
roofline::PassShape stack_pass_shape(const engine::SchedulerOutput& out) {
  roofline::PassShape shape = harness::pass_shape(out);
  shape.chunks.clear();
  for (const engine::ScheduledSequence& s : out.seqs) {
    const int k = s.num_draft_tokens;
    if (k == 0) {
      shape.chunks.push_back({s.start_pos, s.num_tokens, s.sample});
      continue;
    }
    if (s.num_tokens > k + 1) shape.chunks.push_back({s.start_pos, s.num_tokens - k - 1, false});
    for (int i = 0; i <= k; ++i) shape.chunks.push_back({s.first_sample_pos() - 1 + i, 1, true});
  }
  for (int i = 0; i < out.num_wasted_rows; ++i) shape.chunks.push_back({0, 1, false});
  return shape;
}

// The run's clock: every pass advances it by its modeled time on the cost device.
class ModeledClockExecutor final : public engine::Executor {
 public:
  ModeledClockExecutor(engine::Executor& inner, engine::SimulatedClock& clock,
                       const ModelConfig& config, roofline::Precision precision,
                       const roofline::Device& device, StackRun& run)
      : inner_(inner), clock_(clock), config_(config), precision_(precision), device_(device),
        run_(run) {}
  std::vector<int> execute(const engine::SchedulerOutput& out) override {
    if (!out.empty()) {
      const roofline::PassCost c =
          roofline::pass_cost(config_, stack_pass_shape(out), precision_, device_);
      clock_.advance(c.time_s());
      run_.modeled_target_s += c.time_s();
      run_.modeled_bytes += c.bytes();
      ++run_.passes;
      run_.rows += out.num_batched_tokens() + out.num_wasted_rows;
    }
    return inner_.execute(out);
  }

 private:
  engine::Executor& inner_;
  engine::SimulatedClock& clock_;
  ModelConfig config_;
  roofline::Precision precision_;
  const roofline::Device& device_;
  StackRun& run_;
};

[[noreturn]] void bad_spec(const std::string& spec) {
  throw InvalidArgument("--spec '" + spec + "': expected none, ngram or layers-K (the target's "
                        "first K blocks drafting)");
}

int draft_layers(const std::string& spec, int n_layers) {
  if (spec.rfind("layers-", 0) != 0) bad_spec(spec);
  const std::string k = spec.substr(7);
  if (k.empty() || k.size() > 3 || !std::all_of(k.begin(), k.end(), ::isdigit)) bad_spec(spec);
  const int layers = std::stoi(k);
  if (layers < 1 || layers >= n_layers) {
    throw InvalidArgument("--spec " + spec + ": K must be in [1, " + std::to_string(n_layers - 1) +
                          "] (fewer blocks than the target's " + std::to_string(n_layers) + ")");
  }
  return layers;
}

}  // namespace

const engine::ServingWeights& WeightsCache::get(const std::string& quant) {
  auto it = cache_.find(quant);
  if (it == cache_.end()) {
    auto w = std::make_unique<engine::ServingWeights>(engine::load_serving_weights(
        model_, engine::parse_weights_spec(quant), dtype_, calibration_));
    it = cache_.emplace(quant, std::move(w)).first;
  }
  return *it->second;
}

StackRun run_stack(const StackSetup& setup, const StackConfig& config, WeightsCache& weights,
                   const std::vector<engine::Request>& requests) {
  const ModelConfig& mc = setup.bundle->model.config;
  if (config.spec != "none" && !config.continuous) {
    throw InvalidArgument("speculative decoding needs continuous batching (the static batcher "
                          "does not verify drafts): drop --no-continuous or --spec");
  }
  StackRun r;
  r.config = config;
  const engine::ServingWeights& w = weights.get(config.quant);
  r.weights = w.label;
  r.weight_bytes = w.weight_bytes;
  // A draft model (layers-K) lives in the same memory: its weights and its own KV pool.
  std::unique_ptr<engine::DeviceModel> draft;
  std::optional<engine::DraftModelDrafterOptions> draft_options;
  std::int64_t draft_bytes = 0;
  if (config.spec != "none" && config.spec != "ngram") {
    draft = std::make_unique<engine::DeviceModel>(
        speculative::first_layers(setup.bundle->model, draft_layers(config.spec, mc.n_layers)),
        setup.dtype);
    draft_options.emplace();
    draft_options->block_size = setup.block_size;
    draft_options->max_seqs = setup.max_num_seqs;
    draft_options->max_tokens_per_step = setup.max_num_batched_tokens;
    draft_options->max_seq_len = setup.max_model_len;
    draft_options->num_kv_blocks = setup.max_num_seqs * setup.max_model_len / 4 / setup.block_size;
    draft_bytes = draft->weight_bytes() +
                  std::int64_t(draft_options->num_kv_blocks) * setup.block_size *
                      draft->config().kv_bytes_per_token(dtype_bytes(setup.kv_dtype));
    draft_options->kv_dtype = setup.kv_dtype;
  }
  const std::int64_t per_token = mc.kv_bytes_per_token(dtype_bytes(setup.kv_dtype));
  r.kv_tokens = int(std::max<std::int64_t>(0, setup.memory_bytes - w.weight_bytes - draft_bytes) /
                    per_token);
  if (r.kv_tokens < setup.max_model_len) {
    throw InvalidArgument("the memory budget (" + std::to_string(setup.memory_bytes) +
                          " bytes) leaves KV for " + std::to_string(r.kv_tokens) +
                          " tokens after the weights: not one request of max_model_len " +
                          std::to_string(setup.max_model_len) + " (raise --kv-tokens)");
  }
  const int block = config.paged ? setup.block_size : setup.max_model_len;
  const int blocks = r.kv_tokens / block;
  r.max_concurrency = config.paged ? setup.max_num_seqs : std::min(setup.max_num_seqs, blocks);

  engine::SimulatedClock clock;
  roofline::Precision precision = precision_of(engine::parse_weights_spec(config.quant), setup.dtype);
  precision.kv_bytes = dtype_bytes(setup.kv_dtype);
  const double cpu_start = harness::process_cpu_seconds();
  const double wall_start = harness::wall_seconds();
  if (!config.continuous) {
    engine::StaticBatchConfig sc;
    sc.batch_size = r.max_concurrency;
    sc.max_model_len = setup.max_model_len;
    sc.num_kv_blocks = blocks;
    sc.block_size = block;
    sc.enable_prefix_caching = config.paged && config.prefix_caching;
    engine::ModelExecutorOptions o = engine::executor_options_for(sc, setup.max_num_batched_tokens);
    o.kv_dtype = setup.kv_dtype;
    engine::ModelExecutor executor(*w.device, o);
    ModeledClockExecutor modeled(executor, clock, mc, precision, *setup.device, r);
    r.run = engine::run_static(requests, sc, modeled, clock);
  } else {
    engine::SchedulerConfig sc;
    sc.max_num_seqs = r.max_concurrency;
    sc.max_num_batched_tokens = setup.max_num_batched_tokens;
    sc.max_model_len = setup.max_model_len;
    sc.num_kv_blocks = blocks;
    sc.block_size = block;
    sc.enable_prefix_caching = config.paged && config.prefix_caching;
    sc.num_host_blocks = setup.num_host_blocks / (config.paged ? 1 : block / setup.block_size);
    sc.preemption_mode = sc.num_host_blocks > 0 ? config.preemption : engine::PreemptionMode::kRecompute;
    engine::ModelExecutorOptions o = engine::executor_options_for(sc, config.gamma);
    o.kv_dtype = setup.kv_dtype;
    engine::ModelExecutor executor(*w.device, o);
    ModeledClockExecutor modeled(executor, clock, mc, precision, *setup.device, r);
    std::unique_ptr<engine::Drafter> drafter;
    if (config.spec == "ngram") {
      drafter = std::make_unique<engine::NgramDrafter>();
    } else if (draft) {
      roofline::Precision draft_precision = roofline::Precision::dense(dtype_bytes(setup.dtype));
      draft_precision.kv_bytes = dtype_bytes(setup.kv_dtype);
      draft_options->on_pass = [&](const engine::ForwardBatch& b) {  // the draft's passes cost time too
        roofline::PassShape shape;
        for (const engine::SequenceChunk& c : b.chunks) shape.chunks.push_back({c.start_pos, c.num_tokens, true});
        const roofline::PassCost c = roofline::pass_cost(draft->config(), shape, draft_precision, *setup.device);
        clock.advance(c.time_s());
        r.modeled_draft_s += c.time_s();
        r.modeled_bytes += c.bytes();
        ++r.draft_passes;
      };
      drafter = std::make_unique<engine::DraftModelDrafter>(*draft, mc.vocab_size, *draft_options);
    }
    std::vector<engine::Request> work = requests;
    for (engine::Request& q : work) q.num_speculative_tokens = drafter ? config.gamma : 0;
    r.run = engine::run_continuous(std::move(work), sc, modeled, clock, {}, drafter.get());
  }
  r.cpu_seconds = harness::process_cpu_seconds() - cpu_start;
  r.wall_seconds = harness::wall_seconds() - wall_start;
  r.metrics = harness::compute_metrics(r.run);
  double eff = 0;
  int n = 0;
  for (const engine::StepSample& s : r.run.steps) {
    if (s.kv_blocks_used == 0) continue;
    eff += double(s.kv_slots_used) / (double(s.kv_blocks_used) * block);
    ++n;
  }
  r.kv_efficiency = n > 0 ? eff / n : 0;
  return r;
}

}  // namespace nanoserve::ch07
