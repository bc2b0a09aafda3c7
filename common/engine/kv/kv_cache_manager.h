#pragma once
/// \file
/// \brief `KVCacheManager`: block tables for every live sequence on top of a `BlockPool` —
/// allocation on demand, prefix caching, copy-on-write fork and rollback (chapter 2; the
/// method pairs of nano-vllm's `BlockManager`, the policies of vLLM v1's `KVCacheManager`).
///
/// Two prompts sharing a system prompt, block size 4, prefix caching on:
///
///     seq 1:  [S S S S][S S S S][a b c d][e f]     table [0, 1, 2, 3]
///     seq 2:  [S S S S][S S S S][x y]              table [0, 1, 4]
///              ▲ hit     ▲ hit    ▲ new            blocks 0 and 1: ref_cnt 2
///
/// Contract with the engine: every slot a call reserves is written by the next forward pass
/// (the manager caches a block as soon as its slots are all reserved and its tokens known, so
/// a sequence admitted in the same step may hit it; the forward must therefore write each
/// layer's new K/V before any attention reads that layer, as nano-vllm's does). Every
/// `BlockCopy` a call returns must be performed before that forward pass.
///
/// Rules that keep shared KV correct:
///  - Cached blocks are immutable, and so are blocks shared by several tables: a sequence that
///    must write into such a block (its partially filled last block, after a fork or a
///    rollback) first copies it to a fresh block (copy-on-write) and writes there.
///  - A prefix lookup only ever hits whole blocks, and never the block holding a sequence's
///    last token: the model needs that token's logits, so it is recomputed. If the prompt
///    ends on a block boundary, the whole last block is recomputed (into a fresh block),
///    because writing one token into a cached block would break the rule above.
///  - Blocks are freed in reverse table order, so a chain's tail is evicted before its head.
///  - An operation that lacks free blocks throws `BlockPoolExhausted` and changes nothing.

#include <string>
#include <unordered_map>
#include <vector>

#include "common/engine/kv/block_pool.h"
#include "common/engine/kv/block_table.h"
#include "common/engine/kv/host_block_pool.h"
#include "common/engine/kv/sequence.h"

namespace nanoserve::engine {

/// \brief Counters and gauges of a `KVCacheManager`.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp KVCacheMetrics
struct KVCacheMetrics {
  long long queries = 0;  ///< full prompt blocks looked up in the prefix cache (at allocate)
  long long hits = 0;     ///< looked-up blocks found in the cache
  long long prefill_tokens_computed = 0;  ///< prompt tokens left to compute after lookups
  long long prefill_tokens_skipped = 0;   ///< prompt tokens whose KV came from the cache
  long long block_copies = 0;             ///< copy-on-write copies requested
  long long evictions = 0;                ///< cached blocks evicted for reuse
  long long blocks_swapped_out = 0;       ///< device blocks copied to the host pool
  long long blocks_swapped_in = 0;        ///< host blocks copied back to the device
  int blocks_in_use = 0;   ///< blocks with ref_cnt > 0
  int blocks_free = 0;     ///< blocks in the free queue (cached or not)
  int blocks_cached = 0;   ///< blocks in the prefix cache (in use or free)
  long long used_slots = 0;       ///< token slots of in-use blocks that hold a token
  long long allocated_slots = 0;  ///< blocks_in_use * block_size
  int host_blocks_in_use = 0;     ///< host blocks holding swapped-out KV

  /// \brief hits / queries (0 when nothing was looked up).
  double hit_rate() const { return queries == 0 ? 0.0 : double(hits) / double(queries); }
  /// \brief used_slots / allocated_slots (0 when no block is in use). Shared slots count once.
  double utilization() const {
    return allocated_slots == 0 ? 0.0 : double(used_slots) / double(allocated_slots);
  }
};

/// \brief Owns the block pool and one `BlockTable` per live sequence. Not thread-safe: the
/// scheduler's thread owns it.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp KVCacheManager
class KVCacheManager {
 public:
  /// \brief A manager over a fresh pool; throws `InvalidArgument` for sizes `BlockPool`
  /// rejects.
  /// \param num_blocks            physical blocks in the device KV pool
  /// \param block_size            tokens per block
  /// \param enable_prefix_caching hash full blocks and reuse them across sequences
  /// \param hash_fn               block hash; tests pass a weak one to force collisions
  /// \param num_host_blocks       blocks of the host pool sequences can be swapped out to
  KVCacheManager(int num_blocks, int block_size, bool enable_prefix_caching,
                 BlockHashFn hash_fn = &xxh3_block_hash, int num_host_blocks = 0);

  /// \brief Tokens per block.
  int block_size() const { return pool_.block_size(); }
  /// \brief The underlying pool (read-only: block records, free queue, cache).
  const BlockPool& pool() const { return pool_; }

  /// @name A new sequence
  /// @{

  /// \brief Tokens of `seq` whose KV a call to `allocate` would take from the prefix cache:
  /// a multiple of the block size, at most `seq.num_tokens() - 1`. No side effects.
  int num_cached_tokens(const Sequence& seq) const;
  /// \brief Whether `allocate(seq, num_new_tokens)` would find enough free blocks (hits on
  /// free cached blocks count as used: taking them removes them from the free queue). Throws
  /// the `InvalidArgument`s of `allocate`.
  bool can_allocate(const Sequence& seq, int num_new_tokens = -1) const;
  /// \brief Free blocks `allocate(seq, num_new_tokens)` would take (hits on free cached blocks
  /// included). Throws the `InvalidArgument`s of `allocate`.
  int num_blocks_to_allocate(const Sequence& seq, int num_new_tokens = -1) const;
  /// \brief Creates `seq`'s table: takes the longest cached prefix of full blocks (the
  /// returned number of tokens, which the caller stores as `num_computed_tokens`), then
  /// reserves slots for `num_new_tokens` more tokens (-1: all the rest of `seq`; a smaller
  /// number lets a chunked prefill reserve its first chunk). Throws `InvalidArgument` if the
  /// id is already live, `seq` is empty or `num_new_tokens` is outside
  /// [1, tokens not cached], and `BlockPoolExhausted` (changing nothing) when blocks run out.
  int allocate(const Sequence& seq, int num_new_tokens = -1);
  /// @}


  /// @name A growing sequence (decode, the next prefill chunk, draft tokens)
  /// @{

  /// \brief Whether `append_slots(seq, num_new_tokens)` would find enough free blocks,
  /// counting the copy a shared or cached last block needs. Throws the `InvalidArgument`s of
  /// `append_slots`.
  bool can_append(const Sequence& seq, int num_new_tokens = 1) const;
  /// \brief Reserves slots for the next `num_new_tokens` tokens of `seq` (which must already
  /// hold them): a new block whenever the last one is full, a copy when the last one is
  /// shared or cached (returned; perform it before the forward pass). Blocks that become full
  /// are cached. Throws `InvalidArgument` for an unknown sequence or too few tokens, and
  /// `BlockPoolExhausted` (changing nothing) when blocks run out.
  std::vector<BlockCopy> append_slots(const Sequence& seq, int num_new_tokens);
  /// \brief `append_slots(seq, 1)`: the slot of the token sampled last.
  std::vector<BlockCopy> append_slot(const Sequence& seq) { return append_slots(seq, 1); }
  /// @}


  /// @name Draft tokens of speculative decoding in the scheduler (chapter 7)
  /// @{

  /// \brief Free blocks `append_slots(seq, num_new_tokens, num_draft_tokens)` would take (a
  /// copy-on-write copy included). Throws the `InvalidArgument`s of `append_slots`.
  int num_blocks_to_append(const Sequence& seq, int num_new_tokens, int num_draft_tokens = 0) const;
  /// \brief Whether `append_slots(seq, num_new_tokens, num_draft_tokens)` would find enough
  /// free blocks.
  bool can_append(const Sequence& seq, int num_new_tokens, int num_draft_tokens) const {
    return num_blocks_to_append(seq, num_new_tokens, num_draft_tokens) <= pool_.num_free_blocks();
  }
  /// \brief `append_slots(seq, num_new_tokens)`, then `num_draft_tokens` more slots for draft
  /// tokens after them (`seq` need not hold those). A block holding a draft slot is not
  /// cached: what it will hold is known only after verification (`accept_drafts`), so a
  /// rejected draft never leaves a cached block behind that the next token would have to copy.
  /// Throws like `append_slots`, and `std::logic_error` while drafts of an earlier call are
  /// not accepted yet.
  ///
  ///     before:   [a b c d][e _ _ _]             5 slots
  ///     append 1 + 3 drafts:  [a b c d][e f x1 x2][x3 _ _ _]   9 slots, 3 of them drafts
  ///     accept_drafts(1):     [a b c d][e f x1 _]             7 slots; block 2 goes back
  std::vector<BlockCopy> append_slots(const Sequence& seq, int num_new_tokens,
                                      int num_draft_tokens);
  /// \brief Verification of the drafts of the last `append_slots` with drafts: the first
  /// `num_accepted` draft slots now hold accepted tokens (which `seq` must hold), the others
  /// are rolled back (blocks left empty go back to the pool, tail first), and blocks now full
  /// of verified tokens are cached. Throws `InvalidArgument` for a count outside
  /// [0, drafts] or a sequence that does not hold the accepted tokens.
  void accept_drafts(const Sequence& seq, int num_accepted);
  /// @}


  /// @name Sharing, shrinking and releasing
  /// @{

  /// \brief Parallel sampling: `child_id` gets a table sharing all of `parent_id`'s blocks
  /// (no block is allocated; the shared partial last block is copied on its first write).
  void fork(int64_t parent_id, int64_t child_id);
  /// \brief Speculative decoding: forgets the last `num_tokens` slots of a sequence (the
  /// rejected draft tokens). Blocks left empty are released (tail first); nothing is
  /// un-cached, so blocks other sequences share keep their contents.
  void rollback(int64_t seq_id, int num_tokens);
  /// \brief Releases a finished or preempted sequence's blocks in reverse table order (a
  /// swapped-out sequence's host blocks).
  void free(int64_t seq_id);
  /// @}


  /// @name Swapping to the host pool (chapter 7; kv_cache_manager_swap.cpp)
  /// @{

  /// \brief The host pool.
  const HostBlockPool& host_pool() const { return host_; }
  /// \brief Host blocks `swap_out(seq_ids)` would take: each distinct block of their tables
  /// once. Throws `InvalidArgument` for a sequence without a device table.
  int num_host_blocks_to_swap_out(const std::vector<int64_t>& seq_ids) const;
  /// \brief Moves the tables of `seq_ids` (samples of one request may share blocks) to the
  /// host pool: each distinct device block gets one host block (shared by the same sequences
  /// as on the device); the device blocks are released, tail first. Returns the copies to
  /// perform, device → host, before the next forward pass writes anything. Throws
  /// `BlockPoolExhausted` (for the host pool), changing nothing, when it is too small.
  ///
  ///     device:  s1 [b3][b7]  s2 [b3][b9]       (b3 shared: a forked prompt)
  ///     swap_out({s1, s2}) → {b3→h0, b7→h1, b9→h2};  s1 [h0][h1]  s2 [h0][h2]  h0: ref 2
  std::vector<BlockSwap> swap_out(const std::vector<int64_t>& seq_ids);
  /// \brief Device blocks `swap_in(seq_ids)` would take: each distinct host block once.
  int num_blocks_to_swap_in(const std::vector<int64_t>& seq_ids) const;
  /// \brief Brings swapped-out sequences back: a fresh device block per distinct host block
  /// (sharing kept), host blocks released, and — with prefix caching — their full blocks
  /// cached again from `seqs`' tokens. Returns the copies, host → device, to perform before
  /// the next forward pass. Throws `BlockPoolExhausted` (changing nothing) when the device
  /// pool is short, `InvalidArgument` for a sequence that is not swapped out.
  std::vector<BlockSwap> swap_in(const std::vector<const Sequence*>& seqs);
  /// \brief Whether `seq_id` is swapped out.
  bool is_swapped(int64_t seq_id) const { return swapped_.count(seq_id) != 0; }
  /// \brief Number of swapped-out sequences.
  int num_swapped() const { return static_cast<int>(swapped_.size()); }
  /// \brief The host table of a swapped-out sequence (host block ids). Throws
  /// `InvalidArgument` for another id.
  const BlockTable& swapped_table(int64_t seq_id) const;
  /// @}


  /// \brief Whether `seq_id` has a table.
  bool contains(int64_t seq_id) const { return tables_.count(seq_id) != 0; }
  /// \brief Number of live sequences.
  int num_sequences() const { return static_cast<int>(tables_.size()); }
  /// \brief The table of a live sequence. Throws `InvalidArgument` for an unknown id.
  const BlockTable& block_table(int64_t seq_id) const;
  /// \brief Current counters and gauges (O(blocks) for the slot counts).
  KVCacheMetrics metrics() const;
  /// \brief `BlockPool::check_invariants` plus: each block's ref_cnt equals the number of
  /// tables holding it (no leak, no double free), table sizes match their token counts, and
  /// with prefix caching every full block of a table is cached as the child of the block
  /// before it. Returns the first violation, or an empty string.
  std::string check_invariants() const;

 private:
  struct Plan {
    std::vector<int> hits;  ///< cached blocks to reuse, in table order
    int num_free_hits = 0;  ///< of those, blocks now free (taking them uses free blocks)
    int num_new_blocks = 0;
    int num_tokens = 0;     ///< slots the table covers afterwards
  };
  Plan plan_allocate(const Sequence& seq, int num_new_tokens) const;
  std::vector<int> lookup(const Sequence& seq) const;
  BlockTable& table_of(int64_t seq_id, const char* caller);
  const BlockTable& table_of(int64_t seq_id, const char* caller) const;
  int blocks_to_append(const BlockTable& table, const Sequence& seq, int n, bool* copy) const;
  void cache_full_blocks(const Sequence& seq, const BlockTable& table, int first, int end);

  BlockPool pool_;
  std::unordered_map<int64_t, BlockTable> tables_;
  HostBlockPool host_;
  std::unordered_map<int64_t, BlockTable> swapped_;  ///< host tables of swapped-out sequences
  KVCacheMetrics counters_;  ///< the cumulative fields; gauges are filled in by metrics()
};

}  // namespace nanoserve::engine
