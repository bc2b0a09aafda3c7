#include "common/eval/documents.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"

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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LoadError(path, "file", std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw LoadError(path, "file", "read failed");
  return bytes.str();
}

}  // namespace nanoserve::eval
