// A SAX handler that builds the document as nlohmann's own DOM parser does, leaving out values as
// they end (tools/analysis/filtered_json.hpp says why).
#include "analysis/filtered_json.hpp"

#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace hetflow {

using nlohmann::json;

namespace {

class LeavingOut : public nlohmann::json_sax<json> {
 public:
  explicit LeavingOut(const JsonLeftOut& left_out) : left_out_(left_out) {}

  json root;

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t&) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& k) override {
    if (skipping_) return true;
    if (open_.size() == 1) top_key_ = k;
    skip_next_ = left_out_.embedded_nodes && open_.size() == 2 && top_key_ == "hetflow" && k == "nodes";
    key_ = std::move(k);
    return true;
  }

  // What json::parse would have thrown: a syntax error, or a number out of range.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (const auto* syntax = dynamic_cast<const json::parse_error*>(&e))
      rethrow_ = [copy = *syntax] { throw copy; };
    else if (const auto* range = dynamic_cast<const json::out_of_range*>(&e))
      rethrow_ = [copy = *range] { throw copy; };
    else
      rethrow_ = [what = std::string(e.what())] { throw std::runtime_error(what); };
    return false;
  }

  void throw_error() const {
    if (rethrow_) rethrow_();
    throw std::runtime_error("JSON parsing stopped without an error");
  }

 private:
  // The top level's "traceEvents" array is the innermost value being built.
  bool in_trace_events() const { return open_.size() == 2 && top_key_ == "traceEvents" && open_[1]->is_array(); }

  // A value about to be placed is left out: inside one left out, named by its key, or an event.
  bool leave_out_next() {
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    return left_out_.trace_events && in_trace_events();
  }

  json* place(json&& v) {
    if (open_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }

  bool put(json&& v) {
    if (skipping_ || leave_out_next()) return true;
    place(std::move(v));
    return true;
  }

  bool open(json&& container) {
    if (skipping_ || leave_out_next()) {
      ++skipping_;
      return true;
    }
    // A child is filled while its parent is left alone, so the pointer stays valid until it ends.
    open_.push_back(place(std::move(container)));
    return true;
  }

  bool close() {
    if (skipping_) {
      --skipping_;
      return true;
    }
    open_.pop_back();
    if (left_out_.hazard_arrows && in_trace_events()) {
      json& events = *open_.back();
      const json& ended = events.back();
      if (ended.is_object())
        if (auto ph = ended.find("ph"); ph != ended.end() && (*ph == "s" || *ph == "f"))
          events.erase(events.size() - 1);
    }
    return true;
  }

  JsonLeftOut left_out_;
  std::vector<json*> open_;  // the objects and arrays being built, outermost first
  std::string top_key_;      // the top level's key whose value is being built
  std::string key_;          // the innermost object's key whose value comes next
  bool skip_next_ = false;
  std::size_t skipping_ = 0;  // nesting inside a value left out
  std::function<void()> rethrow_;
};

}  // namespace

json parse_leaving_out(const std::string& text, const JsonLeftOut& left_out) {
  LeavingOut handler(left_out);
  if (!json::sax_parse(text, &handler)) handler.throw_error();
  return std::move(handler.root);
}

}  // namespace hetflow
