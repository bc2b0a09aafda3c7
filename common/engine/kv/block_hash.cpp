#include "common/engine/kv/block_hash.h"

#include <xxhash.h>

namespace nanoserve::engine {

BlockHash xxh3_block_hash(BlockHash parent_hash, const int* token_ids, int count) {
  // Seeding with the parent hash chains the blocks without copying the parent into a buffer;
  // XXH3's seeded variants are independent hash functions for different seeds.
  static_assert(sizeof(int) == 4, "token ids are hashed as 32-bit integers");
  return XXH3_64bits_withSeed(token_ids, sizeof(int) * static_cast<size_t>(count), parent_hash);
}

}  // namespace nanoserve::engine
