#pragma once
// How messages name a region of a tile (controller.cpp's checks, parallel_for's chunk writes): one
// wording wherever a user's box is refused.
#include <hetflow/access.hpp>

#include <string>

namespace hetflow::detail {

// A region as the user gave it: every dimension the tile has, and any other the box does not leave
// at {0, 1} (rows(1, 1) of a 1-D tile is wrong in y, which "[0:1000)" would hide), each as
// "first:end", or "first:+size" where the end does not fit.
std::string region_text(const Box& b, const Extent& e);

// "region [a:b) is out of the bounds of tile 'x' ([0:n))", or empty where `a` lies within its tile.
std::string out_of_bounds(const Access& a);

}  // namespace hetflow::detail
