#pragma once
// Reading a JSON dump back (docs/dump-schema.md): what `hetflow dump` and the tests use. The
// runtime only writes dumps (include/hetflow/dump.hpp).
#include <hetflow/dump.hpp>

#include <string>
#include <utility>
#include <vector>

namespace hetflow {

// Reads a JSON dump back. Throws Error saying what is wrong (not JSON, wrong "format", a missing or
// mistyped field, an edge naming an unknown node). Edges are attached to their target's in_edges.
std::pair<std::vector<RequestRecord>, GraphInfo> from_json(const std::string& json);

// from_json on the contents of a file; errors name the file.
std::pair<std::vector<RequestRecord>, GraphInfo> load_dump(const std::string& path);

}  // namespace hetflow
