#pragma once
/// \file
/// \brief `KVCacheBlock`: the host-side record of one physical block of the paged KV cache
/// (chapter 2). The block's keys and values live on the device; this record says who uses the
/// block, whether its contents are cached for reuse, and where it sits in the free queue.
///
/// A block holds the K and V vectors of `block_size` consecutive tokens of one sequence, for
/// every layer. Its life, as the `BlockPool` sees it:
///
///                 get_new_blocks                 all its slots reserved
///     ┌──────────┐ ───────────────► ┌───────────┐ ──────────────────────► ┌─────────────┐
///     │ FREE     │                  │ IN USE    │                         │ IN USE,     │
///     │ ref 0    │ ◄─────────────── │ ref >= 1  │                         │ CACHED      │
///     └──────────┘   last ref freed └───────────┘                         │ ref >= 1    │
///          ▲                                                              └─────────────┘
///          │ popped from the queue head:                       last ref freed │      ▲
///          │ evicted, its hash entry removed                                  ▼      │ touch
///          │                                                      ┌──────────────┐   │ (prefix
///          └───────────────────────────────────────────────────── │ FREE, CACHED │ ──┘  hit)
///                                                                 │ ref 0        │
///                                                                 └──────────────┘
///
/// Both FREE states are in the LRU free queue; IN USE blocks are not. A block is cached when
/// it is full and its tokens are known (hash, chain id and token ids are set).
///
/// Cached blocks are immutable: nobody writes into a block that has a hash (a sequence that
/// must write there copies it first, see `KVCacheManager`).

#include <cstdint>
#include <vector>

namespace nanoserve::engine {

/// \brief Hash of a full block's token chain (the block's tokens and, through the parent's
/// hash, every token before them). Only an index: a hit is confirmed by comparing token ids
/// and the parent's chain id, so a collision costs a missed hit, never a wrong one.
using BlockHash = uint64_t;

/// \brief A chain id: names the exact token sequence from a sequence's start to the end of a
/// block. Blocks holding the same chain (duplicates computed twice) share it; blocks whose
/// hashes collide do not. Ids are never reused. 0 means "no block" (the parent of the first
/// block of every sequence).
using ChainId = uint64_t;

/// \brief The chain id that every first block of a sequence has as its parent.
constexpr ChainId kRootChainId = 0;

/// \brief The bookkeeping of one physical KV block (vLLM's `KVCacheBlock`, nano-vllm's `Block`).
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp KVCacheBlock
struct KVCacheBlock {
  int block_id = -1;  ///< index of the block in the device KV pool; -1 for queue sentinels
  int ref_cnt = 0;    ///< number of block tables that contain this block
  /// \brief Whether the block is in the prefix cache: it is full, its tokens are known, and
  /// `hash`, `chain_id`, `parent_chain_id` and `token_ids` describe it. Only full blocks are
  /// ever cached, and a cached block is never written again.
  bool cached = false;
  BlockHash hash = 0;                    ///< chained hash of the block; valid when `cached`
  ChainId chain_id = 0;                  ///< identity of the token chain ending here
  ChainId parent_chain_id = 0;           ///< chain id of the block before it in its sequence
  std::vector<int> token_ids;            ///< (block_size) the tokens whose K/V it holds
  KVCacheBlock* prev_free = nullptr;     ///< previous block in the free queue (intrusive)
  KVCacheBlock* next_free = nullptr;     ///< next block in the free queue (intrusive)
};

/// \brief A device copy the engine must perform before the next forward pass: the whole KV
/// block `src` (every layer, K and V) into block `dst`. Produced by copy-on-write.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp BlockCopy
struct BlockCopy {
  int src = -1;  ///< block whose contents are copied (still used by someone else or cached)
  int dst = -1;  ///< freshly allocated block that will receive the copy
  /// \brief Equality, for tests.
  bool operator==(const BlockCopy& other) const { return src == other.src && dst == other.dst; }
};

/// \brief A whole-block copy between the device pool and the host pool (swap preemption,
/// chapter 7): every layer's K and V of device block `device` and host block `host`, in the
/// direction of the list it is in (`SchedulerOutput::blocks_to_swap_out` / `_in`).
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp HostBlockPool
struct BlockSwap {
  int device = -1;  ///< block of the device pool
  int host = -1;    ///< block of the host pool
  /// \brief Equality, for tests.
  bool operator==(const BlockSwap& other) const {
    return device == other.device && host == other.host;
  }
};

}  // namespace nanoserve::engine
