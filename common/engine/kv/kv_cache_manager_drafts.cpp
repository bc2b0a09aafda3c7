// KVCacheManager's slots for draft tokens (speculative decoding inside the scheduler, chapter
// 7): reserved after a sequence's verified tokens, uncached until verification says which of
// them stand.
#include <stdexcept>
#include <string>

#include "common/engine/kv/kv_cache_manager.h"

namespace nanoserve::engine {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

void check_drafts(int num_draft_tokens, const char* caller) {
  if (num_draft_tokens < 0) {
    throw InvalidArgument(std::string("KVCacheManager::") + caller +
                          ": num_draft_tokens = " + std::to_string(num_draft_tokens) +
                          " must be >= 0");
  }
}

}  // namespace

int KVCacheManager::num_blocks_to_append(const Sequence& seq, int num_new_tokens,
                                         int num_draft_tokens) const {
  check_drafts(num_draft_tokens, "num_blocks_to_append");
  const BlockTable& table = table_of(seq.seq_id, "num_blocks_to_append");
  bool copy = false;
  const int blocks = blocks_to_append(table, seq, num_new_tokens, &copy);
  const int end = table.num_tokens_ + num_new_tokens;
  return blocks + ceil_div(end + num_draft_tokens, block_size()) - ceil_div(end, block_size());
}

std::vector<BlockCopy> KVCacheManager::append_slots(const Sequence& seq, int num_new_tokens,
                                                    int num_draft_tokens) {
  const int needed = num_blocks_to_append(seq, num_new_tokens, num_draft_tokens);
  if (needed > pool_.num_free_blocks()) {  // change nothing when short
    throw BlockPoolExhausted("append_slots(" + std::to_string(seq.seq_id) + ", " +
                                 std::to_string(num_new_tokens) + " + " +
                                 std::to_string(num_draft_tokens) + " drafts)",
                             needed, pool_.num_free_blocks(), pool_.num_blocks());
  }
  std::vector<BlockCopy> copies = append_slots(seq, num_new_tokens);  // caches verified blocks
  BlockTable& table = table_of(seq.seq_id, "append_slots");
  const int end = table.num_tokens_ + num_draft_tokens;
  const std::vector<int> fresh =
      pool_.get_new_blocks(ceil_div(end, block_size()) - table.num_blocks());
  table.block_ids_.insert(table.block_ids_.end(), fresh.begin(), fresh.end());
  table.num_tokens_ = end;
  table.num_draft_slots_ = num_draft_tokens;
  return copies;
}

void KVCacheManager::accept_drafts(const Sequence& seq, int num_accepted) {
  BlockTable& table = table_of(seq.seq_id, "accept_drafts");
  const int drafts = table.num_draft_slots_;
  const int verified = table.num_tokens_ - drafts;  // slots of verified tokens before
  if (num_accepted < 0 || num_accepted > drafts) {
    throw InvalidArgument("KVCacheManager::accept_drafts: " + std::to_string(num_accepted) +
                          " accepted of the " + std::to_string(drafts) + " draft slots of sequence " +
                          std::to_string(seq.seq_id));
  }
  if (seq.num_tokens() < verified + num_accepted) {
    throw InvalidArgument("KVCacheManager::accept_drafts: sequence " +
                          std::to_string(seq.seq_id) + " holds " +
                          std::to_string(seq.num_tokens()) + " tokens, fewer than the " +
                          std::to_string(verified + num_accepted) + " slots it keeps");
  }
  // BEGIN EXERCISE ch07.1 "Verification outcome: keep the accepted drafts' slots, return the rest" points=15 minutes=25
  // HINT: The draft slots are the table's last `drafts` slots. Forget that they are drafts
  // HINT: (num_draft_slots_), give back the rejected ones with rollback (blocks left empty
  // HINT: return to the pool, tail first), then cache the blocks now full of verified tokens:
  // HINT: cache_full_blocks from the block that held the first draft slot to the new end.
  // STUB: (void)verified;
  // STUB: throw Error("exercise ch07.1 not done: KVCacheManager::accept_drafts");
  table.num_draft_slots_ = 0;
  rollback(seq.seq_id, drafts - num_accepted);
  // The blocks from the first one that held a draft slot on are now full of verified tokens
  // up to the new end: cache them (the blocks before were cached when they filled).
  cache_full_blocks(seq, table, verified / block_size(), table.num_tokens_ / block_size());
  // END EXERCISE
}

}  // namespace nanoserve::engine
