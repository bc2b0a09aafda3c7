#pragma once
/// \file
/// \brief `ApiError`: a request the server refuses, as the OpenAI API refuses it — an HTTP
/// status and the error object `{"error": {"message", "type", "param", "code"}}`.

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace nanoserve::server {

/// \brief An error answered to the client (status, and the OpenAI error object's fields).
class ApiError : public std::runtime_error {
 public:
  /// \brief `status` (400, 404, 413, 429, 503 …), `message`, and the object's other fields;
  /// `retry_after_s` > 0 adds a `Retry-After` header.
  ApiError(int status, const std::string& message, std::string type = "invalid_request_error",
           std::string param = "", std::string code = "", int retry_after_s = 0)
      : std::runtime_error(message), status_(status), type_(std::move(type)),
        param_(std::move(param)), code_(std::move(code)), retry_after_s_(retry_after_s) {}

  /// \brief The HTTP status.
  int status() const { return status_; }
  /// \brief Seconds for `Retry-After` (0: none).
  int retry_after_s() const { return retry_after_s_; }
  /// \brief `{"error": {"message", "type", "param", "code"}}` (param and code null when empty).
  nlohmann::json to_json() const {
    return {{"error",
             {{"message", what()},
              {"type", type_},
              {"param", param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_)},
              {"code", code_.empty() ? nlohmann::json(nullptr) : nlohmann::json(code_)}}}};
  }

 private:
  int status_;
  std::string type_, param_, code_;
  int retry_after_s_;
};

/// \brief A 400 `invalid_request_error` about field `param`.
inline ApiError bad_field(const std::string& param, const std::string& message) {
  return ApiError(400, message, "invalid_request_error", param);
}

}  // namespace nanoserve::server
