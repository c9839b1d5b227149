#pragma once
// The hazard tracker of docs/architecture.md, "Hazards": per (tile, image) the outstanding
// accesses (the last writers and the readers since them), each with its box. It knows nothing of
// OpenCL or of how requests run; `Handle` names a request and `is_done(handle)` says whether it
// has completed, so completed accesses are pruned and the lists stay short.
#include <hetflow/box.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace hetflow::detail {

enum class Hazard : std::uint8_t { RAW, WAR, WAW };
enum class Image : std::uint8_t { host, device };

inline const char* to_string(Hazard h) { return h == Hazard::RAW ? "RAW" : h == Hazard::WAR ? "WAR" : "WAW"; }
inline const char* to_string(Image i) { return i == Image::host ? "host" : "device"; }

inline Box intersection(const Box& a, const Box& b) {
  Box r;
  for (int d = 0; d < 3; ++d) {
    const std::size_t lo = std::max(a.offset[d], b.offset[d]);
    const std::size_t hi = std::min(a.offset[d] + a.size[d], b.offset[d] + b.size[d]);
    r.offset[d] = lo;
    r.size[d] = hi > lo ? hi - lo : 0;
  }
  return r;
}

// The smallest box holding both.
inline Box bounding_box(const Box& a, const Box& b) {
  Box r;
  for (int d = 0; d < 3; ++d) {
    r.offset[d] = std::min(a.offset[d], b.offset[d]);
    r.size[d] = std::max(a.offset[d] + a.size[d], b.offset[d] + b.size[d]) - r.offset[d];
  }
  return r;
}

// What is left of `a` outside `b`, exactly: `piece` is called with each of up to six boxes (two
// slabs per dimension), `a` itself where they do not overlap, nothing where `b` contains `a`. A
// write that covers an earlier access in part leaves the tracker these pieces; a single box kept
// whole where the rest was not one (a cut in the middle: two) made a reader of the overwritten
// middle depend on the earlier write too, and cancelled it if that write failed (a loop's device
// chunk behind a failed writer of its whole output, a user's trial, 2026-11-29).
template <class Piece>
void subtract(Box a, const Box& b, Piece&& piece) {
  const Box in = intersection(a, b);
  if (in.empty()) {
    piece(a);
    return;
  }
  for (int d = 0; d < 3; ++d) {
    const std::size_t a_end = a.offset[d] + a.size[d], in_end = in.offset[d] + in.size[d];
    if (in.offset[d] > a.offset[d]) {
      Box below = a;
      below.size[d] = in.offset[d] - a.offset[d];
      piece(below);
    }
    if (in_end < a_end) {
      Box above = a;
      above.offset[d] = in_end;
      above.size[d] = a_end - in_end;
      piece(above);
    }
    a.offset[d] = in.offset[d];  // the rest lies within b along d
    a.size[d] = in.size[d];
  }
}

template <class Handle>
class DependencyTracker {
  struct Entry;

 public:
  // Why `to` must wait for `from`: the hazard, where (tile, image, the overlapping region) and the
  // slots of docs/architecture.md, "Hazards" (offloading_write, kernel_read, host_write, ...).
  struct Edge {
    Handle from;
    Hazard hazard;
    std::uint64_t tile;
    Image image;
    Box region;
    const char* from_slot;
    const char* to_slot;
  };

  // `who` reads and/or writes `box` of (tile, image). Appends to `edges` one edge per outstanding
  // conflicting access of another request, then records the access. Never blocks.
  template <class IsDone>
  void access(std::uint64_t tile, Image image, const Box& box, bool reads, bool writes, const Handle& who,
              const char* slot, IsDone&& is_done, std::vector<Edge>& edges) {
    access(images(tile), tile, image, box, reads, writes, who, slot, is_done, edges);
  }

  // The outstanding accesses of both of `tile`'s images, for the access() below: a request that
  // touches both (a transfer) looks the tile up once.
  class Images {
    friend class DependencyTracker;
    explicit Images(std::array<std::vector<Entry>, 2>& lists) : lists_(lists) {}
    std::array<std::vector<Entry>, 2>& lists_;
  };
  Images images(std::uint64_t tile) {
    auto [at, added] = lists_.try_emplace(tile);
    if (added) {
      sweep_queue_.push_back(tile);
      sweep_debt_ += 2;  // two visits per new tile: the sweep keeps ahead of tiles being made
    }
    return Images(at->second);
  }
  template <class IsDone>
  void access(Images of, std::uint64_t tile, Image image, const Box& box, bool reads, bool writes, const Handle& who,
              const char* slot, IsDone&& is_done, std::vector<Edge>& edges) {
    auto& list = of.lists_[static_cast<int>(image)];
    prune(list, is_done);
    const std::size_t first_edge = edges.size();
    for (const auto& e : list) {
      if (e.who == who || !e.box.overlaps(box)) continue;
      if (!e.writes && !writes) continue;  // two reads never conflict
      const Hazard h = e.writes ? (reads ? Hazard::RAW : Hazard::WAW) : Hazard::WAR;
      const Box region = edge_regions_ ? intersection(e.box, box) : Box{};
      // Two pieces of one access (subtract) make one edge, over both regions' bounding box.
      auto same = std::find_if(edges.begin() + std::ptrdiff_t(first_edge), edges.end(),
                               [&](const Edge& x) { return x.from == e.who && x.hazard == h; });
      if (same == edges.end())
        edges.push_back(Edge{e.who, h, tile, image, region, e.slot, slot});
      else if (edge_regions_)
        same->region = bounding_box(same->region, region);
    }
    if (writes) {
      // Accesses inside the written box are now ordered before `who`; anyone who would conflict
      // with them conflicts with `who` and so waits for them transitively. One that the write
      // covers in part keeps only the parts left (subtract): a reader of what `who` overwrote then
      // depends on `who` alone, and is not cancelled by an older write's failure
      // (docs/architecture.md, "Failures").
      list.erase(std::remove_if(list.begin(), list.end(), [&](const Entry& e) { return box.contains(e.box); }),
                 list.end());
      const std::size_t kept = list.size();
      for (std::size_t i = 0; i < kept; ++i) {
        if (!list[i].box.overlaps(box)) continue;
        const Entry whole = list[i];  // the pieces after the first are appended: list may move
        bool first = true;
        subtract(whole.box, box, [&](const Box& piece) {
          if (first)
            list[i].box = piece;
          else
            list.push_back(Entry{whole.who, piece, whole.writes, whole.slot});
          first = false;
        });
      }
    } else {
      for (auto& e : list)
        if (e.who == who && e.box.contains(box)) return;  // already recorded (e.g. in(a) twice)
    }
    list.push_back(Entry{who, box, writes, slot});
  }

  // Every request still outstanding on `tile` (both images), each once.
  template <class IsDone, class Handles>
  void outstanding(std::uint64_t tile, IsDone&& is_done, Handles& out) {
    auto it = lists_.find(tile);
    if (it == lists_.end()) return;
    for (auto& list : it->second) {
      prune(list, is_done);
      for (const auto& e : list)
        if (std::find(out.begin(), out.end(), e.who) == out.end() && !is_done(e.who)) out.push_back(e.who);
    }
  }

  // Every request still outstanding on any tile, each once; drops tiles left with nothing.
  template <class IsDone, class Handles>
  void outstanding_all(IsDone&& is_done, Handles& out) {
    for (auto it = lists_.begin(); it != lists_.end();) {
      outstanding(it->first, is_done, out);
      if (it->second[0].empty() && it->second[1].empty())
        it = lists_.erase(it);
      else
        ++it;
    }
  }

  void forget(std::uint64_t tile) { lists_.erase(tile); }

  // Prunes tiles, the longest unvisited first, and forgets those left with nothing: up to `count`
  // while tiles are being made (two visits owed per new tile), and one every kIdleSweepEvery calls
  // for those whose requests had not ended when visited, so a program that reuses its tiles pays
  // little. A tile whose handles were all dropped is never accessed again: without this, its
  // completed requests (which own the tile's buffers) would stay until the next wait_all.
  template <class IsDone>
  void sweep(std::size_t count, IsDone&& is_done) {
    if (++sweep_calls_ % kIdleSweepEvery == 0) ++sweep_debt_;
    for (; count > 0 && sweep_debt_ > 0 && !sweep_queue_.empty(); --count, --sweep_debt_) {
      const std::uint64_t tile = sweep_queue_.front();
      sweep_queue_.pop_front();
      auto it = lists_.find(tile);
      if (it == lists_.end()) continue;  // forgotten since, or visited through a later entry
      for (auto& list : it->second) prune(list, is_done);
      if (it->second[0].empty() && it->second[1].empty())
        lists_.erase(it);
      else
        sweep_queue_.push_back(tile);
    }
  }

  // Keep completed accesses (up to a bound per list) so their edges still show in a recorded
  // task graph; the caller then drops completed predecessors itself.
  void keep_completed(bool keep) { keep_completed_ = keep; }
  // Whether edges carry their region (on by default): only records show it, and the intersection
  // was a tenth of a transfer's dispatch (callgrind, perf/RESULTS.md 2026-11-29). Off, it is empty.
  void edge_regions(bool on) { edge_regions_ = on; }

  // Outstanding accesses recorded, over all tiles (what must stay flat over a long run).
  std::size_t size() const {
    std::size_t n = 0;
    for (const auto& [tile, lists] : lists_) n += lists[0].size() + lists[1].size();
    return n;
  }

 private:
  struct Entry {
    Handle who;
    Box box;
    bool writes;
    const char* slot;
  };
  template <class IsDone>
  void prune(std::vector<Entry>& list, IsDone& is_done) const {
    if (keep_completed_ && list.size() < kKeptCompleted) return;
    list.erase(std::remove_if(list.begin(), list.end(), [&](const Entry& e) { return is_done(e.who); }), list.end());
  }
  static constexpr std::size_t kKeptCompleted = 32;
  bool keep_completed_ = false;
  bool edge_regions_ = true;
  std::unordered_map<std::uint64_t, std::array<std::vector<Entry>, 2>> lists_;
  std::deque<std::uint64_t> sweep_queue_;  // tiles of lists_, each at least once, in visiting order
  std::size_t sweep_debt_ = 0;             // visits owed
  std::size_t sweep_calls_ = 0;
  static constexpr std::size_t kIdleSweepEvery = 8;
};

}  // namespace hetflow::detail
