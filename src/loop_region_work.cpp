#include "loop_region_work.hpp"

#include <cmath>
#include <cstdio>

namespace hetflow::detail {

namespace {
// How much a side's speed leans on its mean iterations per second where the calls cannot tell
// (one split repeated, or a single call): small, as the calls' own equations are exact (at 0.05 a
// device's work was 13 % off in tests/test_loop_region_work.cpp), but not nothing: at 1e-4 a device
// that slowed fourfold from one call to the next was taken for a change in where the work lies
// (tests/test_loop_schedulers.cpp, "LogFit explores again when the device's behaviour changes").
constexpr double kLeanOnMean = 0.001;

// Solves a x = b in place (a: n x n, row-major) by Gaussian elimination with partial pivoting;
// false if it is singular.
bool solve(std::vector<double>& a, std::vector<double>& b) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[p * n + c])) p = r;
    if (!(std::abs(a[p * n + c]) > 1e-12)) return false;
    if (p != c) {
      for (std::size_t k = 0; k < n; ++k) std::swap(a[p * n + k], a[c * n + k]);
      std::swap(b[p], b[c]);
    }
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / a[c * n + c];
      for (std::size_t k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
      b[r] -= f * b[c];
    }
  }
  for (std::size_t c = n; c-- > 0;) {
    for (std::size_t k = c + 1; k < n; ++k) b[c] -= a[c * n + k] * b[k];
    b[c] /= a[c * n + c];
  }
  return true;
}
}  // namespace

RegionWork::RegionWork(unsigned sides) : sides_(sides ? sides : 1u), weight_(kBins, 1.0), prefix_(kBins + 1, 0.0) {
  for (unsigned s = 0; s < sides_; ++s) group_.push_back(s);
}

void RegionWork::same_speed(std::vector<unsigned> group_of_side) {
  group_of_side.resize(sides_, 0);
  // Renumbered 0..k-1 in order of first appearance, so that groups index the solver's unknowns.
  std::vector<unsigned> seen;
  for (unsigned s = 0; s < sides_; ++s) {
    auto it = std::find(seen.begin(), seen.end(), group_of_side[s]);
    if (it == seen.end()) seen.push_back(group_of_side[s]), it = seen.end() - 1;
    group_[s] = unsigned(it - seen.begin());
  }
}

void RegionWork::record(unsigned side, std::size_t begin, std::size_t iterations, double seconds, bool measured) {
  if (side >= sides_ || iterations == 0 || n_ == 0) return;
  this_call_.push_back({begin, iterations, side, seconds, measured && seconds > 0});
}

void RegionWork::restart(std::size_t n) {
  bool learned = false;
  if (!this_call_.empty()) {
    std::sort(this_call_.begin(), this_call_.end(), [](const Chunk& a, const Chunk& b) { return a.begin < b.begin; });
    std::size_t covered = 0;
    bool usable = true;
    for (const Chunk& c : this_call_) {
      usable = usable && c.measured && c.begin == covered;
      covered = c.begin + c.iterations;
    }
    if (usable && covered == n_) {
      Call call{n_, std::move(this_call_), std::vector<double>(sides_, 0.0), std::vector<double>(sides_, 0.0)};
      for (const Chunk& c : call.chunks)
        call.seconds[c.side] += c.seconds, call.iterations[c.side] += double(c.iterations);
      calls_.push_front(std::move(call));
      if (calls_.size() > kCalls) calls_.pop_back();
      learned = true;
    }
  }
  this_call_.clear();
  if (!learned && n == n_) return;  // nothing new: the weights stand
  n_ = n;
  learn();
}

void RegionWork::learn() {
  std::fill(weight_.begin(), weight_.end(), 1.0);
  irregular_ = false;
  if (!calls_.empty() && n_ > 0) {
    // The sides' speeds: u_s times each side's mean iterations per second p_s, so that each call's
    // chunks hold its iterations — sum_s u_s p_s T_sc / n_c = 1 — least squares over the calls,
    // newer ones weighing more, and u_s near 1 where the calls leave it free.
    // (By group: the sides of one kind share their speed.)
    const unsigned groups = *std::max_element(group_.begin(), group_.end()) + 1;
    std::vector<double> mean(groups, 0.0), secs(groups, 0.0), its(groups, 0.0);
    double w = 1;
    for (const Call& c : calls_) {
      for (unsigned s = 0; s < sides_; ++s) secs[group_[s]] += w * c.seconds[s], its[group_[s]] += w * c.iterations[s];
      w *= 0.5;
    }
    for (unsigned g = 0; g < groups; ++g) mean[g] = secs[g] > 0 ? its[g] / secs[g] : 0.0;
    std::vector<double> m(std::size_t(groups) * groups, 0.0), r(groups, 0.0);
    for (unsigned g = 0; g < groups; ++g) m[g * groups + g] = kLeanOnMean, r[g] = kLeanOnMean;
    w = 1;
    for (const Call& c : calls_) {
      std::vector<double> a(groups, 0.0);
      for (unsigned s = 0; s < sides_; ++s) a[group_[s]] += mean[group_[s]] * c.seconds[s] / double(c.n);
      for (unsigned i = 0; i < groups; ++i) {
        r[i] += w * a[i];
        for (unsigned j = 0; j < groups; ++j) m[i * groups + j] += w * a[i] * a[j];
      }
      w *= 0.5;
    }
    std::vector<double> u = r;
    if (!solve(m, u)) u.assign(groups, 1.0);
    std::vector<double> speed(sides_);
    for (unsigned s = 0; s < sides_; ++s) speed[s] = mean[group_[s]] * std::max(0.05, u[group_[s]]);
    // Each call's cumulative work, as a fraction of its own, at its chunks' edges (as fractions of
    // its range): the knots. All the recent calls' knots together, newer ones weighing more, those
    // at one place averaged, made to rise (pool adjacent violators), and linear between them.
    // Averaging whole curves instead (each call's straight between its own knots) flattened them:
    // a call run in one chunk is a straight line from end to end, and weighed as much as the others.
    struct Knot {
      double x, f, w;
    };
    std::vector<Knot> knots;
    w = 1;
    for (const Call& c : calls_) {
      double total = 0;
      for (const Chunk& k : c.chunks) total += speed[k.side] * k.seconds;
      if (!(total > 0)) continue;
      double f = 0;
      for (std::size_t k = 0; k + 1 < c.chunks.size(); ++k) {  // the last edge is the range's end
        f += speed[c.chunks[k].side] * c.chunks[k].seconds;
        const double x = double(c.chunks[k].begin + c.chunks[k].iterations) / double(c.n);
        // One knot a bin and call (its last) is all the weights, one a bin, can use: hundreds of
        // CPU chunks a call made a restart cost half a millisecond.
        const double next = double(c.chunks[k + 1].begin + c.chunks[k + 1].iterations) / double(c.n);
        if (k + 2 < c.chunks.size() && std::floor(next * kBins) == std::floor(x * kBins)) continue;
        knots.push_back({x, f / total, w});
      }
      w *= 0.5;
    }
    std::sort(knots.begin(), knots.end(), [](const Knot& a, const Knot& b) { return a.x < b.x; });
    std::vector<Knot> pooled{{0.0, 0.0, 1e9}};
    for (const Knot& k : knots) {
      if (pooled.size() > 1 && pooled.back().x == k.x) {  // the same edge in another call: averaged
        Knot& p = pooled.back();
        p.f = (p.f * p.w + k.f * k.w) / (p.w + k.w), p.w += k.w;
      } else {
        pooled.push_back(k);
      }
      // Pool adjacent violators: a knot below the one before it (noise) is merged with it.
      while (pooled.size() > 2 && pooled[pooled.size() - 2].f > pooled.back().f) {
        const Knot b = pooled.back();
        pooled.pop_back();
        Knot& a = pooled.back();
        a.x = (a.x * a.w + b.x * b.w) / (a.w + b.w), a.f = (a.f * a.w + b.f * b.w) / (a.w + b.w), a.w += b.w;
      }
    }
    pooled.push_back({1.0, 1.0, 1e9});
    std::vector<double> edge(kBins + 1), cumulative(kBins + 1, 0.0);
    double farthest = 0;  // from a regular range's cumulative work (the diagonal)
    std::size_t k = 1;
    for (std::size_t b = 0; b <= kBins; ++b) {
      edge[b] = double(bin_begin(b)) / double(n_);
      while (k + 1 < pooled.size() && pooled[k].x < edge[b]) ++k;
      const Knot &lo = pooled[k - 1], &hi = pooled[k];
      const double t = hi.x > lo.x ? std::clamp((edge[b] - lo.x) / (hi.x - lo.x), 0.0, 1.0) : 1.0;
      cumulative[b] = std::clamp(lo.f + t * (hi.f - lo.f), 0.0, 1.0);
      farthest = std::max(farthest, std::abs(cumulative[b] - edge[b]));
    }
    irregular_ = farthest > kRegularWithin;
    for (std::size_t b = 0; irregular_ && b < kBins; ++b)
      if (edge[b + 1] > edge[b])  // else an empty bin (fewer iterations than bins)
        // A bin of no work would make the iterations in it free: at least a thousandth of the mean.
        weight_[b] = std::max(1e-3, (cumulative[b + 1] - cumulative[b]) / (edge[b + 1] - edge[b]));
  }
  for (std::size_t b = 0; b < kBins; ++b)
    prefix_[b + 1] = prefix_[b] + weight_[b] * double(bin_begin(b + 1) - bin_begin(b));
}

std::string RegionWork::describe() const {
  if (!irregular_) return "work by region: regular (learned from " + std::to_string(calls_.size()) + " calls)";
  std::string text = "work by region (1 = the mean) at each tenth of the range:";
  char w[16];
  for (int tenth = 0; tenth < 10; ++tenth) {
    std::snprintf(w, sizeof w, " %.3g", weight_at(n_ * std::size_t(tenth) / 10 + n_ / 20));
    text += w;
  }
  return text + " (learned from " + std::to_string(calls_.size()) + " calls)";
}

double RegionWork::before(std::size_t i) const {
  if (n_ == 0 || i == 0) return double(i);
  if (i >= n_) return prefix_[kBins] + double(i - n_) * weight_[kBins - 1];  // past the range: the last bin's
  const std::size_t b = bin_of(i);
  return prefix_[b] + weight_[b] * double(i - bin_begin(b));
}

double RegionWork::work(std::size_t begin, std::size_t iterations) const {
  if (!irregular_) return double(iterations);
  return before(begin + iterations) - before(begin);
}

std::size_t RegionWork::within(std::size_t begin, double work, std::size_t cap, bool round_up) const {
  if (!(work > 0) || cap == 0) return 0;
  if (!irregular_) return std::min(cap, std::size_t(round_up ? std::ceil(work) : std::floor(work)));
  const double target = before(begin) + work;
  if (before(begin + cap) <= target) return cap;
  // before() rises with i: the last i whose work from `begin` stays within `work`, or the next one.
  std::size_t lo = begin, hi = begin + cap;  // before(lo) <= target < before(hi)
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (before(mid) <= target ? lo : hi) = mid;
  }
  return (round_up && before(lo) < target ? hi : lo) - begin;
}

}  // namespace hetflow::detail
