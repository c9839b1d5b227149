#pragma once
// Reading a trace or dump written by hetflow without holding what the reader never looks at. A
// trace of 50,000 requests is ~90 MB of JSON, and a whole document of it took ~10 bytes of memory
// per byte of text (perf/RESULTS.md, 2026-11-28 "dumps at scale"). nlohmann's own filtering
// parser (json::parse with a callback) rescans an array's elements each time one of them ends:
// 156 s for that trace, against 2.7 s for json::parse. This one drops as it goes.
#include <string>

#include <nlohmann/json.hpp>

namespace hetflow {

struct JsonLeftOut {
  bool trace_events = false;    // every element of the top level's "traceEvents" (the array stays, empty)
  bool hazard_arrows = false;   // of "traceEvents", the flow events ("ph" "s" and "f")
  bool embedded_nodes = false;  // the embedded dump's "nodes" ("hetflow" → "nodes"), key and all
};

// Parses `text` as json::parse does, without what `left_out` names. A syntax error throws
// nlohmann::json::parse_error, as json::parse does.
nlohmann::json parse_leaving_out(const std::string& text, const JsonLeftOut& left_out);

}  // namespace hetflow
