#include "common/eval/documents.h"

#include "common/error.h"
#include "common/io/input_file.h"

namespace nanoserve::eval {

std::vector<std::string_view> split_documents(std::string_view text,
                                              std::string_view delimiter) {
  if (delimiter.empty()) throw InvalidArgument("split_documents: the delimiter is empty");
  std::vector<std::string_view> docs;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(delimiter, begin);
    if (end == std::string_view::npos) end = text.size();
    if (end > begin) docs.push_back(text.substr(begin, end - begin));
    begin = end + delimiter.size();
  }
  return docs;
}

std::string read_text_file(const std::string& path) {
  return read_input_file(path, "text file", kMaxTextFileBytes);
}

}  // namespace nanoserve::eval
