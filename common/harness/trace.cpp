#include "common/harness/trace.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/io/input_file.h"
#include "common/io/json_text.h"
#include "common/io/output_file.h"

namespace nanoserve::harness {
namespace {

using nlohmann::json;

const char* const kFields = "arrival_s, prompt, prompt_len, max_tokens, seed, temperature";

/// An integer field in [lo, hi]; throws LoadError naming it.
int get_int(const json& line, const char* key, int lo, int hi, const std::string& where) {
  const json& v = line.at(key);
  if (!v.is_number_unsigned() || v.get<uint64_t>() < uint64_t(lo) ||
      v.get<uint64_t>() > uint64_t(hi)) {
    throw LoadError(where, key,
                    "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                        "], got " + v.dump());
  }
  return static_cast<int>(v.get<uint64_t>());
}

/// A number for a message: "1e+300", not 300 digits.
std::string show(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// The checks shared by the loader and the writer: returns {field, problem} or {"", ""}.
std::pair<std::string, std::string> semantic_error(const TraceRequest& r, double prev_arrival) {
  if (!std::isfinite(r.arrival_s) || r.arrival_s < 0 || r.arrival_s > kMaxArrivalSeconds) {
    return {"arrival_s", "must be a finite number >= 0 and at most 1e7 (seconds), got " +
                             show(r.arrival_s)};
  }
  if (r.arrival_s < prev_arrival) {
    return {"arrival_s", std::to_string(r.arrival_s) + " is earlier than the previous line's " +
                             std::to_string(prev_arrival) + " (traces are in arrival order)"};
  }
  if (r.prompt.empty() == (r.prompt_len == 0)) {
    return {"prompt", "exactly one of prompt (non-empty text) and prompt_len must be given"};
  }
  if (r.prompt.empty() && (r.prompt_len < 1 || r.prompt_len > kMaxTraceTokens)) {
    return {"prompt_len", "must be in [1, " + std::to_string(kMaxTraceTokens) + "], got " +
                              std::to_string(r.prompt_len)};
  }
  if (r.max_tokens < 1 || r.max_tokens > kMaxTraceTokens) {
    return {"max_tokens", "must be in [1, " + std::to_string(kMaxTraceTokens) + "], got " +
                              std::to_string(r.max_tokens)};
  }
  if (r.temperature && !(std::isfinite(*r.temperature) && *r.temperature >= 0)) {
    return {"temperature", "must be a finite number >= 0, got " + std::to_string(*r.temperature)};
  }
  return {};
}

/// The shortest decimal that reads back as `f` (0.8f is written "0.8", not 0.800000011920929).
double shortest_double(float f) {
  for (int digits = 1; digits < 9; ++digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*g", digits, double(f));
    const double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) == f) return d;
  }
  return double(f);
}

TraceRequest parse_line(const std::string& text, const std::string& path, int line_no,
                        double prev_arrival) {
  const std::string where = path + ":" + std::to_string(line_no);
  const json line = parse_json_text(text, path, line_no);
  if (!line.is_object()) throw LoadError(where, "json", "each line must be a JSON object");
  for (const auto& item : line.items()) {
    const std::string& k = item.key();
    if (k != "arrival_s" && k != "prompt" && k != "prompt_len" && k != "max_tokens" &&
        k != "seed" && k != "temperature") {
      throw LoadError(where, k, std::string("unknown field (known: ") + kFields + ")");
    }
  }
  for (const char* key : {"arrival_s", "max_tokens", "seed"}) {
    if (!line.contains(key)) throw LoadError(where, key, "missing");
  }
  TraceRequest r;
  if (!line["arrival_s"].is_number()) {
    throw LoadError(where, "arrival_s", "must be a number, got " + line["arrival_s"].dump());
  }
  r.arrival_s = line["arrival_s"].get<double>();
  if (line.contains("prompt")) {
    if (!line["prompt"].is_string()) {
      throw LoadError(where, "prompt", "must be a string, got " + line["prompt"].dump());
    }
    r.prompt = line["prompt"].get<std::string>();
    if (r.prompt.empty()) throw LoadError(where, "prompt", "is empty");
  }
  if (line.contains("prompt_len")) {
    r.prompt_len = get_int(line, "prompt_len", 1, kMaxTraceTokens, where);
  }
  r.max_tokens = get_int(line, "max_tokens", 1, kMaxTraceTokens, where);
  if (!line["seed"].is_number_unsigned()) {
    throw LoadError(where, "seed", "must be an integer in [0, 2^64), got " + line["seed"].dump());
  }
  r.seed = line["seed"].get<uint64_t>();
  if (line.contains("temperature")) {
    if (!line["temperature"].is_number()) {
      throw LoadError(where, "temperature",
                      "must be a number, got " + line["temperature"].dump());
    }
    r.temperature = line["temperature"].get<float>();
  }
  if (auto [field, problem] = semantic_error(r, prev_arrival); !field.empty()) {
    throw LoadError(where, field, problem);
  }
  return r;
}

}  // namespace

std::vector<TraceRequest> load_trace(const std::string& path) {
  return parse_trace(read_input_file(path, "trace", kMaxTraceBytes), path);
}

std::vector<TraceRequest> parse_trace(const std::string& jsonl, const std::string& path) {
  std::istringstream in(jsonl);
  std::vector<TraceRequest> requests;
  std::string text;
  for (int line_no = 1; std::getline(in, text); ++line_no) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (requests.size() == std::size_t(kMaxTraceRequests)) {
      throw LoadError(path + ":" + std::to_string(line_no), "file",
                      "more than " + std::to_string(kMaxTraceRequests) +
                          " requests (the limit for one workload)");
    }
    const double prev = requests.empty() ? 0.0 : requests.back().arrival_s;
    requests.push_back(parse_line(text, path, line_no, prev));
  }
  if (requests.empty()) throw LoadError(path, "file", "holds no request");
  return requests;
}

void write_trace(const std::string& path, const std::vector<TraceRequest>& requests) {
  std::ostringstream out;
  double prev = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const TraceRequest& r = requests[i];
    if (auto [field, problem] = semantic_error(r, prev); !field.empty()) {
      throw InvalidArgument("write_trace: request " + std::to_string(i) + ": " + field + ": " +
                            problem);
    }
    prev = r.arrival_s;
    nlohmann::ordered_json line;
    line["arrival_s"] = r.arrival_s;
    if (r.prompt.empty()) {
      line["prompt_len"] = r.prompt_len;
    } else {
      line["prompt"] = r.prompt;
    }
    line["max_tokens"] = r.max_tokens;
    line["seed"] = r.seed;
    if (r.temperature) line["temperature"] = shortest_double(*r.temperature);
    out << line.dump() << '\n';
  }
  write_output_file(path, out.str());
}

}  // namespace nanoserve::harness
