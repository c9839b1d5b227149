// The hazard tracker alone (no OpenCL): docs/architecture.md's hazard table row by row, regions, pruning.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "access_plan.hpp"
#include "dependency_tracker.hpp"
#include "few_first_list.hpp"
#include "request.hpp"

using namespace hetflow;
using namespace hetflow::detail;

namespace {

using Tracker = DependencyTracker<int>;

struct Op {
  const char* name;
  Kind kind;
  Role role;
};
// Every kind of request on a tile x, named by the slot it updates in the table.
const Op ops[] = {
    {"H2D", Kind::h2d, Role::in},          {"D2H", Kind::d2h, Role::in},
    {"kernel IN", Kind::kernel, Role::in}, {"kernel OUT", Kind::kernel, Role::out},
    {"kernel IO", Kind::kernel, Role::io}, {"host IN", Kind::host, Role::in},
    {"host OUT", Kind::host, Role::out},   {"host IO", Kind::host, Role::io},
};

struct Fixture {
  Tracker tracker;
  std::set<int> done;
  std::vector<Tracker::Edge> edges;
  auto is_done() {
    return [this](int h) { return done.count(h) > 0; };
  }
  // Submits request `who` of kind op on `box` of tile 1 and returns the edges it got.
  std::vector<Tracker::Edge> submit(int who, const Op& op, const Box& box = Box{{0, 0, 0}, {100, 1, 1}}) {
    edges.clear();
    AccessPlan plans[2];
    const int n = plan_accesses(op.kind, Access{nullptr, box, op.role}, plans);
    for (int i = 0; i < n; ++i)
      tracker.access(1, plans[i].image, box, plans[i].reads, plans[i].writes, who, plans[i].slot, is_done(), edges);
    return edges;
  }
};

std::set<std::string> waited_slots(const std::vector<Tracker::Edge>& edges) {
  std::set<std::string> s;
  for (const auto& e : edges) s.insert(e.from_slot);
  return s;
}

}  // namespace

TEST_CASE("each row of the hazard table waits on exactly the slots it lists") {
  // Row → the earlier requests it must wait for (the table, with the "+" extras of the general form).
  const std::map<std::string, std::set<std::string>> waits = {
      {"H2D", {"kernel IN", "D2H", "kernel OUT", "kernel IO", "H2D", "host OUT", "host IO"}},
      {"D2H", {"kernel OUT", "kernel IO", "H2D", "host IN", "host OUT", "host IO", "D2H"}},
      {"kernel IN", {"kernel OUT", "kernel IO", "H2D"}},
      {"kernel OUT", {"kernel IN", "kernel OUT", "kernel IO", "H2D", "D2H"}},
      {"kernel IO", {"kernel IN", "kernel OUT", "kernel IO", "H2D", "D2H"}},
      {"host IN", {"D2H", "host OUT", "host IO"}},
      {"host OUT", {"D2H", "H2D", "host IN", "host OUT", "host IO"}},
      {"host IO", {"D2H", "H2D", "host IN", "host OUT", "host IO"}},
  };
  for (const auto& row : ops) {
    for (const auto& earlier : ops) {
      CAPTURE(row.name);
      CAPTURE(earlier.name);
      Fixture f;
      f.submit(1, earlier);
      const auto edges = f.submit(2, row);
      const bool expected = waits.at(row.name).count(earlier.name) > 0;
      CHECK(!edges.empty() == expected);
      for (const auto& e : edges) {
        CHECK(e.from == 1);
        CHECK(e.region == (Box{{0, 0, 0}, {100, 1, 1}}));
      }
    }
  }
}

TEST_CASE("edges carry the hazard kind and both slot names") {
  Fixture f;
  f.submit(1, ops[0]);           // H2D
  auto e = f.submit(2, ops[2]);  // kernel IN: RAW on the device image
  REQUIRE(e.size() == 1);
  CHECK(e[0].hazard == Hazard::RAW);
  CHECK(e[0].image == Image::device);
  CHECK(std::string(e[0].from_slot) == "offloading_write");
  CHECK(std::string(e[0].to_slot) == "kernel_read");
  e = f.submit(3, ops[0]);  // H2D again: WAW on the first H2D, WAR against the kernel's read (T-07)
  REQUIRE(e.size() == 2);
  CHECK(e[0].from == 1);
  CHECK(e[0].hazard == Hazard::WAW);
  CHECK(e[1].from == 2);
  CHECK(e[1].hazard == Hazard::WAR);
  CHECK(std::string(e[1].from_slot) == "kernel_read");
  CHECK(std::string(e[1].to_slot) == "offloading_write");
  e = f.submit(4, ops[3]);  // kernel OUT: WAW against the H2D
  REQUIRE(e.size() == 1);
  CHECK(e[0].from == 3);
  CHECK(e[0].hazard == Hazard::WAW);
}

TEST_CASE("disjoint regions are independent, overlapping regions are ordered") {
  Fixture f;
  const Box left{{0, 0, 0}, {50, 1, 1}}, right{{50, 0, 0}, {50, 1, 1}}, middle{{40, 0, 0}, {20, 1, 1}};
  CHECK(f.submit(1, ops[3], left).empty());   // kernel OUT left
  CHECK(f.submit(2, ops[3], right).empty());  // kernel OUT right: disjoint
  auto e = f.submit(3, ops[1], middle);       // D2H middle overlaps both writers
  CHECK(waited_slots(e) == std::set<std::string>{"kernel_write"});
  REQUIRE(e.size() == 2);
  CHECK(e[0].region == (Box{{40, 0, 0}, {10, 1, 1}}));
  CHECK(e[1].region == (Box{{50, 0, 0}, {10, 1, 1}}));
  // 2-D: rows 0-9 and rows 10-19 of a 64-wide tile.
  Fixture g;
  CHECK(g.submit(1, ops[3], Box{{0, 0, 0}, {64, 10, 1}}).empty());
  CHECK(g.submit(2, ops[3], Box{{0, 10, 0}, {64, 10, 1}}).empty());
  CHECK(g.submit(3, ops[2], Box{{0, 9, 0}, {64, 2, 1}}).size() == 2);
  // Same rows, disjoint columns.
  CHECK(g.submit(4, ops[3], Box{{0, 30, 0}, {32, 5, 1}}).empty());
  CHECK(g.submit(5, ops[3], Box{{32, 30, 0}, {32, 5, 1}}).empty());
}

TEST_CASE("a writer covering earlier accesses supersedes them, readers pile up until one does") {
  Fixture f;
  for (int i = 1; i <= 10; ++i) f.submit(i, ops[2]);  // ten kernel readers of the device image
  CHECK(f.tracker.size() == 10);
  auto e = f.submit(11, ops[3]);  // a writer waits for all ten (WAR)
  CHECK(e.size() == 10);
  CHECK(f.tracker.size() == 1);
  e = f.submit(12, ops[2]);  // the next reader waits for the writer only
  REQUIRE(e.size() == 1);
  CHECK(e[0].from == 11);
}

TEST_CASE("a write covering an earlier access in part keeps exactly the rest of it, in boxes") {
  const auto rest = [](const Box& a, const Box& b) {
    std::vector<Box> pieces;
    subtract(a, b, [&](const Box& p) { pieces.push_back(p); });
    return pieces;
  };
  using Boxes = std::vector<Box>;
  const Box a{{10, 0, 0}, {10, 4, 1}};                                               // columns 10-19, rows 0-3
  CHECK(rest(a, Box{{0, 0, 0}, {15, 4, 1}}) == Boxes{Box{{15, 0, 0}, {5, 4, 1}}});   // its start
  CHECK(rest(a, Box{{15, 0, 0}, {50, 9, 1}}) == Boxes{Box{{10, 0, 0}, {5, 4, 1}}});  // its end
  CHECK(rest(a, Box{{0, 2, 0}, {64, 2, 1}}) == Boxes{Box{{10, 0, 0}, {10, 2, 1}}});  // its last rows
  CHECK(rest(a, Box{{12, 0, 0}, {2, 4, 1}}) ==                                       // a gap in the middle
        (Boxes{Box{{10, 0, 0}, {2, 4, 1}}, Box{{14, 0, 0}, {6, 4, 1}}}));
  CHECK(rest(a, Box{{0, 0, 0}, {15, 2, 1}}) ==  // a corner: L-shaped rest
        (Boxes{Box{{15, 0, 0}, {5, 4, 1}}, Box{{10, 2, 0}, {5, 2, 1}}}));
  CHECK(rest(a, Box{{12, 1, 0}, {2, 2, 1}}).size() == 4);  // a hole: a frame
  CHECK(rest(a, Box{{30, 0, 0}, {5, 4, 1}}) == Boxes{a});  // disjoint
  CHECK(rest(a, Box{{0, 0, 0}, {64, 64, 1}}).empty());     // all of it
  // The pieces and the overlap tile `a` exactly: every cell once.
  for (const Box& b : {Box{{12, 1, 0}, {2, 2, 1}}, Box{{0, 0, 0}, {15, 2, 1}}, Box{{11, 3, 0}, {100, 1, 1}}}) {
    std::size_t cells = intersection(a, b).count();
    for (const Box& p : rest(a, b)) {
      cells += p.count();
      CHECK_FALSE(p.overlaps(b));
      CHECK(a.contains(p));
    }
    CHECK(cells == a.count());
  }

  // A cut in the middle of a write: readers of the middle depend on the later writer alone.
  {
    Fixture f;
    f.submit(1, ops[3], Box{{0, 0, 0}, {30, 1, 1}});
    f.submit(2, ops[3], Box{{10, 0, 0}, {10, 1, 1}});
    auto e = f.submit(3, ops[2], Box{{12, 0, 0}, {5, 1, 1}});
    REQUIRE(e.size() == 1);
    CHECK(e[0].from == 2);
    e = f.submit(4, ops[2], Box{{25, 0, 0}, {5, 1, 1}});
    REQUIRE(e.size() == 1);
    CHECK(e[0].from == 1);
    // A reader over both pieces of writer 1 and the middle: one edge from each writer, writer 1's
    // over the bounding box of what it overlaps of the two pieces.
    e = f.submit(5, ops[2], Box{{5, 0, 0}, {20, 1, 1}});
    REQUIRE(e.size() == 2);
    CHECK(e[0].from == 1);
    CHECK(e[0].region == (Box{{5, 0, 0}, {20, 1, 1}}));
    CHECK(e[1].from == 2);
  }

  // Writer 1 of cells 0-9, writer 2 of 0-4: a reader of 0-4 waits for writer 2 only (which waited
  // for 1), one of 5-9 for writer 1 only, one of 3-6 for both.
  Fixture f;
  f.submit(1, ops[3], Box{{0, 0, 0}, {10, 1, 1}});
  auto e = f.submit(2, ops[3], Box{{0, 0, 0}, {5, 1, 1}});
  REQUIRE(e.size() == 1);
  CHECK(e[0].hazard == Hazard::WAW);
  e = f.submit(3, ops[2], Box{{0, 0, 0}, {5, 1, 1}});
  REQUIRE(e.size() == 1);
  CHECK(e[0].from == 2);
  e = f.submit(4, ops[2], Box{{5, 0, 0}, {5, 1, 1}});
  REQUIRE(e.size() == 1);
  CHECK(e[0].from == 1);
  CHECK(e[0].region == (Box{{5, 0, 0}, {5, 1, 1}}));
  e = f.submit(5, ops[2], Box{{3, 0, 0}, {4, 1, 1}});
  CHECK(e.size() == 2);
}

TEST_CASE("a request never waits for itself (in(a) and out(a) in one launch)") {
  Fixture f;
  f.submit(1, ops[2]);
  auto e = f.submit(1, ops[3]);
  CHECK(e.empty());
}

TEST_CASE("pruning keeps memory flat over 1,000,000 requests on one tile") {
  Fixture f;
  std::size_t largest = 0;
  for (int i = 1; i <= 1'000'000; ++i) {
    // Everything but the last few requests has completed, as on a device that keeps up.
    if (i > 4) f.done.insert(i - 4);
    if (f.done.size() > 64) f.done.erase(f.done.begin());
    f.submit(i, ops[i % 2 ? 2 : 5]);  // alternating kernel and host readers: nothing supersedes them
    largest = std::max(largest, f.tracker.size());
  }
  CHECK(largest <= 8);
  std::vector<int> outstanding;
  f.tracker.outstanding(1, f.is_done(), outstanding);
  CHECK(outstanding.size() <= 4);
}

TEST_CASE("outstanding() lists each pending request of a tile once, across both images") {
  Fixture f;
  f.submit(1, ops[0]);  // H2D: host and device image
  f.submit(2, ops[2]);
  std::vector<int> out;
  f.tracker.outstanding(1, f.is_done(), out);
  CHECK(out == std::vector<int>{1, 2});
  f.done.insert(1);
  out.clear();
  f.tracker.outstanding(1, f.is_done(), out);
  CHECK(out == std::vector<int>{2});
  f.tracker.forget(1);
  CHECK(f.tracker.size() == 0);
}

// What the dispatcher records per predecessor a request writes after (src/request.hpp): the first
// few inline, then all of them in a vector, in the order they came, whatever the count.
TEST_CASE("a request's list of predecessors it writes after keeps every one, in order, past its inline ones") {
  for (std::uint64_t count : {0u, 1u, 3u, 4u, 9u}) {
    CAPTURE(count);
    hetflow::detail::Request::WrittenBeforeList list;
    for (std::uint64_t i = 0; i < count; ++i) list.push_back({i + 10, i % 2 == 0});
    std::uint64_t seen = 0;
    for (const auto& w : list) {
      CHECK(w.id == seen + 10);
      CHECK(w.reads == (seen % 2 == 0));
      ++seen;
    }
    CHECK(seen == count);
    const auto& as_const = list;
    CHECK(std::uint64_t(as_const.end() - as_const.begin()) == count);
  }
}

// The same list holding requests (a request's device dependants, src/few_first_list.hpp): past its
// inline ones it keeps no second reference to any (a request kept alive keeps its tiles and event),
// and a swap, how Engine::finish takes them, moves the whole list whichever way it is kept.
TEST_CASE("a list that keeps its first elements inline holds each element once, and swaps whole") {
  for (std::size_t count : {0u, 1u, 2u, 5u}) {
    CAPTURE(count);
    std::vector<std::shared_ptr<int>> items;
    hetflow::detail::FewFirstList<std::shared_ptr<int>, 1> list;
    for (std::size_t i = 0; i < count; ++i) {
      items.push_back(std::make_shared<int>(int(i)));
      list.push_back(items.back());
    }
    CHECK(list.size() == count);
    CHECK(list.empty() == (count == 0));
    for (const auto& item : items) CHECK(item.use_count() == 2);  // ours and the list's, no more
    hetflow::detail::FewFirstList<std::shared_ptr<int>, 1> taken;
    taken.swap(list);
    CHECK(list.empty());
    CHECK(taken.size() == count);
    int expected = 0;
    for (const auto& item : taken) CHECK(*item == expected++);
    taken = {};
    for (const auto& item : items) CHECK(item.use_count() == 1);  // let go with the list
  }
}

// A request's accesses are such a list too (src/request.hpp, AccessList): a launch's are built
// apart and moved in, a host task's assigned from the caller's vector. Moved from, a list must be
// empty: counting inline elements that were moved away would hand out empty tiles.
TEST_CASE("a list that keeps its first elements inline is empty once moved from, and assigns whole") {
  for (std::size_t count : {0u, 1u, 2u, 5u}) {
    CAPTURE(count);
    std::vector<std::shared_ptr<int>> items;
    for (std::size_t i = 0; i < count; ++i) items.push_back(std::make_shared<int>(int(i)));
    hetflow::detail::FewFirstList<std::shared_ptr<int>, 1> list;
    list.assign(items.begin(), items.end());
    REQUIRE(list.size() == count);
    if (count) CHECK(*list.front() == 0);
    hetflow::detail::FewFirstList<std::shared_ptr<int>, 1> moved(std::move(list));
    CHECK(list.empty());  // NOLINT(bugprone-use-after-move): what is checked
    CHECK(moved.size() == count);
    hetflow::detail::FewFirstList<std::shared_ptr<int>, 1> assigned;
    assigned.push_back(std::make_shared<int>(-1));
    assigned = std::move(moved);
    CHECK(moved.empty());  // NOLINT(bugprone-use-after-move)
    REQUIRE(assigned.size() == count);
    int expected = 0;
    for (const auto& item : assigned) {
      REQUIRE(item);
      CHECK(*item == expected++);
    }
    for (const auto& item : items) CHECK(item.use_count() == 2);  // ours and the list's, no more
    assigned.assign(items.begin(), items.begin());                // nothing: the list is emptied
    CHECK(assigned.empty());
    for (const auto& item : items) CHECK(item.use_count() == 1);
  }
}
