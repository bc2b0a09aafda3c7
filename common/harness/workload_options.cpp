#include "common/harness/workload_options.h"

#include <sstream>

#include "common/error.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve::harness {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
  return parts;
}

double number(const std::string& text, const std::string& what, const std::string& whole) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw InvalidArgument(what + ": '" + text + "' in '" + whole + "' is not a number");
  }
  return v;
}

int integer(const std::string& text, const std::string& what, const std::string& whole) {
  const double v = number(text, what, whole);
  if (v != static_cast<double>(static_cast<int>(v))) {
    throw InvalidArgument(what + ": '" + text + "' in '" + whole + "' is not an integer");
  }
  return static_cast<int>(v);
}

}  // namespace

LengthDist parse_length_dist(const std::string& text, const std::string& what) {
  const std::vector<std::string> p = split(text, ':');
  LengthDist d;
  if (text == "chat") {
    d = LengthDist::log_normal(32, 1.0, 4, 128);
  } else if (p.size() == 2 && p[0] == "fixed") {
    d = LengthDist::fixed(integer(p[1], what, text));
  } else if (p.size() == 3 && p[0] == "uniform") {
    d = LengthDist::uniform(integer(p[1], what, text), integer(p[2], what, text));
  } else if (p.size() == 5 && p[0] == "lognormal") {
    d = LengthDist::log_normal(number(p[1], what, text), number(p[2], what, text),
                               integer(p[3], what, text), integer(p[4], what, text));
  } else {
    throw InvalidArgument(what + ": '" + text +
                          "' is not fixed:N, uniform:LO:HI, lognormal:MEDIAN:SIGMA:LO:HI or chat");
  }
  d.validate(what);
  return d;
}

std::vector<engine::Request> build_workload(const WorkloadOptions& options, const Tokenizer& tokenizer,
                                    int vocab_size) {
  std::vector<TraceRequest> trace;
  if (!options.trace.empty()) {
    trace = load_trace(options.trace);
  } else {
    WorkloadSpec spec;
    spec.num_requests = options.num_requests;
    spec.rate = options.rate;
    spec.prompt_len = parse_length_dist(options.prompt_len, "prompt_len");
    spec.max_tokens = parse_length_dist(options.output_len, "output_len");
    spec.seed = options.seed;
    spec.validate();
    trace = generate_workload(spec);
  }
  RequestDefaults defaults;
  defaults.vocab_size = vocab_size;
  defaults.bos_id = tokenizer.bos_id();
  defaults.stop_token_ids = {tokenizer.eos_id()};
  defaults.sampling.temperature = options.temperature;
  defaults.tokenizer = &tokenizer;
  return make_requests(trace, defaults);
}

std::string describe_workload(const WorkloadOptions& o, std::size_t num_requests) {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%g", o.rate);
  const std::string n = std::to_string(num_requests) + " requests";
  if (!o.trace.empty()) return n + " from " + o.trace;
  return n + ", rate " + rate + "/s, prompts " + o.prompt_len + ", outputs " + o.output_len +
         (o.temperature == 0 ? ", greedy" : ", temperature " + std::to_string(o.temperature));
}

}  // namespace nanoserve::harness
