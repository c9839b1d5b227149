#pragma once
// An OpenCL C built-in type's name taken apart: "float4" is 4 lanes of a 4-byte floating-point
// element. A launch checks each argument's type against what it is given (a tile's elements, a
// scalar's C++ type); the names are parsed where they are made (a kernel's arguments when it is
// created, a tile's element type when it is made, a scalar's type at compile time), not on every
// launch, where parsing cost ~70 instructions a name (callgrind, perf/RESULTS.md 2026-11-29).
#include <cstddef>
#include <string_view>

namespace hetflow::detail {

struct ClType {
  std::size_t bytes = 0;  // of one element; 0: not a built-in type (a typedef, a struct, size_t)
  char kind = 0;          // 'f' floating point, 'i' integer; 0: neither (also bool)
  std::size_t lanes = 1;  // as written: a 3-vector says 3
  bool is_unsigned = false;
};

constexpr ClType parse_cl_type(std::string_view type) {
  struct Known {
    std::string_view name;
    std::size_t bytes;
    char kind;
  };
  constexpr Known known[] = {{"char", 1, 'i'},   {"uchar", 1, 'i'},  {"bool", 1, 0},    {"short", 2, 'i'},
                             {"ushort", 2, 'i'}, {"half", 2, 'f'},   {"int", 4, 'i'},   {"uint", 4, 'i'},
                             {"float", 4, 'f'},  {"long", 8, 'i'},   {"ulong", 8, 'i'}, {"double", 8, 'f'},
                             {"size_t", 0, 0},   {"ptrdiff_t", 0, 0}};
  ClType t;
  std::size_t digits = 0;
  while (digits < type.size() && (type[digits] < '0' || type[digits] > '9')) ++digits;
  if (digits < type.size()) {
    t.lanes = 0;
    for (std::size_t i = digits; i < type.size() && type[i] >= '0' && type[i] <= '9'; ++i)
      t.lanes = t.lanes * 10 + std::size_t(type[i] - '0');
    type = type.substr(0, digits);
  }
  for (const auto& k : known)
    if (k.name == type) {
      t.bytes = k.bytes;
      t.kind = k.kind;
      t.is_unsigned = k.kind == 'i' && type.front() == 'u';
      break;
    }
  return t;
}

// A pointer argument's elements: "float*" is float's.
constexpr ClType parse_cl_pointee(std::string_view type) {
  if (!type.empty() && type.back() == '*') type.remove_suffix(1);
  return parse_cl_type(type);
}

// A name given as a C string, or none (a type without an OpenCL C name).
constexpr ClType parse_cl_type(const char* type) { return type ? parse_cl_type(std::string_view(type)) : ClType{}; }

}  // namespace hetflow::detail
