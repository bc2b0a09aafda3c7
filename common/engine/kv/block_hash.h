#pragma once
/// \file
/// \brief Chained hashing of full KV blocks for prefix caching.
///
/// The hash of block i of a sequence covers its own `block_size` tokens and, through its
/// parent's hash, every token before them:
///
///     h(-1) = kRootBlockHash
///     h(i)  = hash_fn(h(i-1), tokens[i*bs .. (i+1)*bs))
///
/// so two sequences get equal hashes for block i only when they agree on all tokens up to the
/// end of block i (or the hash collides — which the block pool detects by comparing tokens and
/// the parent's chain id). The default function is XXH3-64 from xxHash, seeded with the
/// parent's hash; tests may pass a deliberately weak function to force collisions.

#include "common/engine/kv/kv_cache_block.h"

namespace nanoserve::engine {

/// \brief A block hash function: parent hash + the block's `count` token ids → hash.
/// A plain function pointer so tests can inject a weak one (a captureless lambda converts).
using BlockHashFn = BlockHash (*)(BlockHash parent_hash, const int* token_ids, int count);

/// \brief The parent hash used for the first block of every sequence.
constexpr BlockHash kRootBlockHash = 0x6e616e6f73657276ull;  // "nanoserv" in ASCII

/// \brief The default `BlockHashFn`: `XXH3_64bits_withSeed(token bytes, seed = parent_hash)`.
/// Token ids are hashed as their native 32-bit representation.
/// \param parent_hash hash of the previous block, or `kRootBlockHash`
/// \param token_ids   (count) the block's tokens
/// \param count       number of tokens (the block size)
BlockHash xxh3_block_hash(BlockHash parent_hash, const int* token_ids, int count);

}  // namespace nanoserve::engine
