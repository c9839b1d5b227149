#pragma once
// hetflow: say what to do with tiles — move them, run OpenCL kernels and host functions on them —
// and the oneTBB flow graph runs it, overlapping whatever the tiles' hazards allow. Every public
// header: the README's examples, the loop's and the flow nodes' included, need only this one.
#include <hetflow/access.hpp>
#include <hetflow/box.hpp>
#include <hetflow/controller.hpp>
#include <hetflow/device.hpp>
#include <hetflow/dump.hpp>
#include <hetflow/errors.hpp>
#include <hetflow/flow.hpp>
#include <hetflow/outcome.hpp>
#include <hetflow/parallel_for.hpp>
#include <hetflow/program.hpp>
#include <hetflow/range.hpp>
#include <hetflow/record.hpp>
#include <hetflow/settings.hpp>
#include <hetflow/tile.hpp>
#include <hetflow/trace.hpp>
