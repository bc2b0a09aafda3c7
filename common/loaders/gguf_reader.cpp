#include "common/loaders/gguf_reader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "common/error.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/tensor_decode.h"

namespace nanoserve {

GgufCheckpointReader::GgufCheckpointReader(const std::string& path)
    : mapped_(path),
      file_(parse_gguf(mapped_.data(), mapped_.size(), path)),
      config_(gguf_model_config(file_)) {}

const GgufTensorInfo& GgufCheckpointReader::tensor(const std::string& field, int layer) const {
  return gguf_field_tensor(file_, config_, field, layer);
}

std::vector<float> decode_gguf_range(const GgufFile& file, const GgufTensorInfo& t,
                                     std::size_t offset, std::size_t count) {
  if (t.type->decode == nullptr) {
    throw LoadError(file.name, t.name,
                    std::string("ggml type ") + t.type->name +
                        " is not supported yet (supported: " + decodable_ggml_type_names() + ")");
  }
  offset = std::min<std::size_t>(offset, t.n_elements);
  count = std::min<std::size_t>(count, t.n_elements - offset);
  const std::size_t block = t.type->block_size;
  if (offset % block != 0 || count % block != 0) {
    throw InvalidArgument("decode_gguf_range: " + t.name + ": range [" + std::to_string(offset) +
                          ", +" + std::to_string(count) + ") is not whole blocks of " +
                          std::to_string(block));
  }
  const std::uint8_t* data = file.tensor_data(t) + offset / block * t.type->type_size;
  return decode_tensor(t.type->decode, data, count, file.name, t.name);
}

std::vector<float> GgufCheckpointReader::read(const std::string& field, int layer,
                                              std::size_t offset, std::size_t count) const {
  const GgufTensorInfo& t = tensor(field, layer);
  std::vector<float> values = decode_gguf_range(file_, t, offset, count);
  const std::size_t block = t.type->block_size;
  release(stored(t) + std::min<std::size_t>(offset, t.n_elements) / block * t.type->type_size,
          values.size() / block * t.type->type_size);
  return values;
}

void GgufCheckpointReader::release(const std::uint8_t* data, std::size_t bytes) const {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t from = reinterpret_cast<uintptr_t>(data);
  const uintptr_t start = from / page * page;
  const uintptr_t end = from + bytes;
  if (bytes > 0) madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

Model GgufCheckpointReader::model() const { return model_from_gguf(file_); }

}  // namespace nanoserve
