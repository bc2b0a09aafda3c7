#pragma once
/// \file
/// \brief Splitting an evaluation text into documents (e.g. the TinyStories validation sample,
/// whose stories are separated by "\n<|endoftext|>\n").

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nanoserve::eval {

/// \brief The separator between documents in TinyStories-style text files.
inline constexpr std::string_view kDefaultDelimiter = "\n<|endoftext|>\n";

/// \brief The pieces of `text` between occurrences of `delimiter`, in order, dropping empty
/// pieces (so a trailing delimiter adds no document). The delimiters themselves belong to no
/// document. Throws `InvalidArgument` if `delimiter` is empty. The views point into `text`.
std::vector<std::string_view> split_documents(std::string_view text, std::string_view delimiter);

/// \brief Largest text file read for evaluation or calibration: 1 GiB (the TinyStories
/// sample is 81 KB; every document is tokenized and scored, so far less is practical).
inline constexpr uint64_t kMaxTextFileBytes = 1ull << 30;

/// \brief The whole file as bytes. Throws `LoadError(path, "file", …)` if it cannot be read,
/// is not a regular file (a directory, a FIFO) or is larger than `kMaxTextFileBytes`.
std::string read_text_file(const std::string& path);

}  // namespace nanoserve::eval
