#pragma once
/// \file
/// \brief The merge loop shared by both BPE flavours: repeatedly merge the adjacent pair with
/// the highest priority, the leftmost one on ties, until no pair can be merged.
///
/// llama2.c's `encode` does this literally: every round it rescans all n pairs and shifts the
/// array, O(n²) per text (minutes on a 100 KB prompt). Here every candidate pair sits in a
/// max-heap keyed by (priority, left position); merging a pair only creates the two pairs
/// with its neighbours, so the whole loop is O(n log n). Positions never move: a merged
/// symbol keeps the index of its left half, and the symbols form a doubly linked list.
///
/// ```
///  index:   0     1     2     3            0       1     2     3
///  ids:    [▁]   [t]   [h]   [e]    ──►   [▁]     [th]  (dead) [e]
///  links:   ─────►─────►─────►             ───────►─────────────►
///                 merge (1,2) = "th": 1 absorbs 2, pairs (0,1) and (1,3) are pushed
/// ```
///
/// A heap entry goes stale when either of its symbols changes; each symbol carries a version
/// number bumped on every change, and stale entries are skipped when popped. This is the
/// structure SentencePiece (`bpe_model.cc`) and Hugging Face `tokenizers` (`Word::merge_all`)
/// use too.

#include <optional>
#include <queue>
#include <vector>

namespace nanoserve {

/// \brief What a pair of adjacent token ids merges into, and how eagerly.
struct MergeCandidate {
  double priority;  ///< higher merges first (llama2.c: the merged piece's score; HF: −rank)
  int merged_id;    ///< the token id that replaces the pair
};

/// \brief Merges adjacent pairs of `ids` in priority order (ties: leftmost) until none merges.
///
/// \param ids         (n,) initial token ids, left to right
/// \param find_merge  `std::optional<MergeCandidate>(int left_id, int right_id)`; must be a
///                    pure function of the two ids
/// \return the merged ids, left to right
///
/// The result is exactly what the naive loop "scan every pair, merge the first one with the
/// highest priority, repeat" returns, because the heap always holds every current pair and
/// orders equal priorities by position.
template <class FindMerge>
std::vector<int> merge_adjacent_pairs(const std::vector<int>& ids, FindMerge&& find_merge) {
  struct Symbol {
    int id;
    int prev;      // index of the previous live symbol, −1 at the start
    int next;      // index of the next live symbol, −1 at the end
    int version;   // bumped whenever the symbol changes or dies
  };
  struct Entry {
    double priority;
    int left, right;                  // symbol indices when the entry was pushed
    int left_version, right_version;  // their versions then
    int merged_id;
  };
  struct Lower {  // std::priority_queue pops the "largest": highest priority, then leftmost
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.priority != b.priority) return a.priority < b.priority;
      return a.left > b.left;
    }
  };

  const int n = static_cast<int>(ids.size());
  std::vector<Symbol> symbols(ids.size());
  for (int i = 0; i < n; ++i) symbols[i] = {ids[i], i - 1, i + 1 < n ? i + 1 : -1, 0};

  std::priority_queue<Entry, std::vector<Entry>, Lower> heap;
  auto push_pair = [&](int left) {
    if (left < 0) return;
    const int right = symbols[left].next;
    if (right < 0) return;
    const std::optional<MergeCandidate> c = find_merge(symbols[left].id, symbols[right].id);
    if (c) {
      heap.push({c->priority, left, right, symbols[left].version, symbols[right].version,
                 c->merged_id});
    }
  };
  for (int i = 0; i + 1 < n; ++i) push_pair(i);

  while (!heap.empty()) {
    const Entry e = heap.top();
    heap.pop();
    Symbol& left = symbols[e.left];
    if (left.version != e.left_version || left.next != e.right) continue;  // stale
    Symbol& right = symbols[e.right];
    if (right.version != e.right_version) continue;  // stale
    // Merge: the left symbol absorbs the right one, which leaves the list.
    left.id = e.merged_id;
    ++left.version;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = e.left;
    right.version = -1;  // dead: matches no entry (versions of live symbols are ≥ 0)
    push_pair(left.prev);
    push_pair(e.left);
  }

  std::vector<int> out;
  for (int i = n > 0 ? 0 : -1; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
  return out;
}

}  // namespace nanoserve
