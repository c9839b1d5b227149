// The workload kernels (kernels_cl/sobel.cl, jacobi.cl, matmul.cl) against the CPU references, the
// hand-written native versions in both modes, and the frame sources (generator, Y4M files). Runs on
// the default device (HETFLOW_DEVICE, else the first GPU, else the first device: PoCL here).
#include <doctest/doctest.h>

#include <hetflow/device.hpp>
#include <hetflow/errors.hpp>
#include <hetflow/opencl.hpp>

#include "copy_probe.hpp"
#include "native/native_workloads.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/frames.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace wl = hetflow::workloads;
namespace nat = hetflow::native;
namespace fs = std::filesystem;

namespace {

const std::string kKernelDir = HETFLOW_TEST_SOURCE_DIR "/kernels_cl";

struct ClEnv {
  ClEnv() {
    auto choice = hetflow::select_device();
    device = choice.device.device;
    name = choice.device.name;
    context = cl::Context(device);
    queue = cl::CommandQueue(context, device);
  }
  cl::Device device;
  std::string name;
  cl::Context context;
  cl::CommandQueue queue;
};

ClEnv& env() {
  static ClEnv e;
  return e;
}

cl::Program build(const std::string& file) {
  return nat::build_program(env().context, env().device, kKernelDir + "/" + file);
}

cl::Buffer upload(const std::vector<float>& host) {
  cl::Buffer b(env().context, CL_MEM_READ_WRITE, host.size() * sizeof(float));
  env().queue.enqueueWriteBuffer(b, CL_TRUE, 0, host.size() * sizeof(float), host.data());
  return b;
}

cl::Buffer device_buffer(std::size_t count) {
  return cl::Buffer(env().context, CL_MEM_READ_WRITE, count * sizeof(float));
}

std::vector<float> download(const cl::Buffer& b, std::size_t count) {
  std::vector<float> host(count);
  env().queue.enqueueReadBuffer(b, CL_TRUE, 0, count * sizeof(float), host.data());
  return host;
}

cl::NDRange stencil_global(int w, int h) {
  return {wl::round_up(static_cast<std::size_t>(w), 16), wl::round_up(static_cast<std::size_t>(h), 16)};
}

// A fresh file name in the temporary directory, removed at the end of the scope.
struct TempFile {
  explicit TempFile(const std::string& stem)
      : path((fs::temp_directory_path() / ("hetflow_test_" + stem + "_" + std::to_string(::getpid()) + ".y4m"))
                 .string()) {}
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::string path;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const hetflow::Error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace

TEST_CASE("workloads_reference: workload kernel files build and declare the documented kernels") {
  INFO("device: " << env().name);
  struct Expect {
    const char* file;
    std::vector<std::pair<std::string, cl_uint>> kernels;  // name, number of arguments
  };
  const std::vector<Expect> files = {
      {"sobel.cl", {{"sobel_rows", 5}, {"sobel_col_smooth", 4}, {"sobel_col_diff", 4}, {"sobel_magnitude", 5}}},
      {"jacobi.cl", {{"jacobi_step", 3}}},
      {"matmul.cl", {{"matmul_tiled", 4}}},
  };
  for (const auto& f : files) {
    INFO("file: " << f.file);
    cl::Program program;
    REQUIRE_NOTHROW(program = build(f.file));
    for (const auto& [name, nargs] : f.kernels) {
      INFO("kernel: " << name);
      cl::Kernel k(program, name.c_str());
      CHECK(k.getInfo<CL_KERNEL_NUM_ARGS>() == nargs);
      // Every float* argument is __global; the trailing ints are by value.
      for (cl_uint a = 0; a < nargs; ++a) {
        const std::string type = k.getArgInfo<CL_KERNEL_ARG_TYPE_NAME>(a);
        const auto address = k.getArgInfo<CL_KERNEL_ARG_ADDRESS_QUALIFIER>(a);
        if (type.find('*') != std::string::npos)
          CHECK(address == CL_KERNEL_ARG_ADDRESS_GLOBAL);
        else
          CHECK(type.rfind("int", 0) == 0);
      }
    }
  }
  // matmul.cl states its local size, and it matches the constants the hosts use.
  cl::Kernel mm(build("matmul.cl"), "matmul_tiled");
  const auto reqd = mm.getWorkGroupInfo<CL_KERNEL_COMPILE_WORK_GROUP_SIZE>(env().device);
  CHECK(reqd[0] == static_cast<std::size_t>(wl::kMatmulTile));
  CHECK(reqd[1] == static_cast<std::size_t>(wl::kMatmulTile / wl::kMatmulWpt));
  CHECK(reqd[2] == 1);
  const auto geo = nat::matmul_geometry(mm, env().device, 64);
  CHECK(geo.tile == 16);
  CHECK(geo.global[0] == 64);
  CHECK(geo.global[1] == 64 / geo.wpt);
  CHECK_THROWS_AS(nat::matmul_geometry(mm, env().device, 72), hetflow::UsageError);
}

TEST_CASE("workloads_reference: sobel_reference computes the separable clamp-to-edge Sobel") {
  // A ramp along x: row difference 2 inside, 1 at the clamped borders; gx = 4 * that; gy = 0.
  const int w = 5, h = 4;
  std::vector<float> in(w * h), out(w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) in[y * w + x] = static_cast<float>(x);
  wl::sobel_reference(in.data(), out.data(), w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) CHECK(out[y * w + x] == ((x == 0 || x == w - 1) ? 4.0f : 8.0f));
  // A ramp along y: gy = rs[y+1] - rs[y-1] = 4 * (2 inside, 1 at the borders).
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) in[y * w + x] = static_cast<float>(y);
  wl::sobel_reference(in.data(), out.data(), w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) CHECK(out[y * w + x] == ((y == 0 || y == h - 1) ? 4.0f : 8.0f));
}

TEST_CASE("workloads_reference: sobel.cl on a 67x45 frame equals sobel_reference") {
  INFO("device: " << env().name);
  const int w = 67, h = 45;  // odd sizes: the global size is rounded up to 80x48
  const std::size_t n = static_cast<std::size_t>(w) * h;
  std::vector<float> frame(n), ref(n);
  wl::generate_frame(frame.data(), w, h, 7);
  wl::sobel_reference(frame.data(), ref.data(), w, h);

  cl::Program program = build("sobel.cl");
  cl::Kernel rows(program, "sobel_rows"), cs(program, "sobel_col_smooth"), cd(program, "sobel_col_diff"),
      mag(program, "sobel_magnitude");
  cl::Buffer in = upload(frame), rd = device_buffer(n), rs = device_buffer(n), gx = device_buffer(n),
             gy = device_buffer(n);
  // The output starts as a canary, so a pixel the kernels miss shows.
  cl::Buffer out = upload(std::vector<float>(n, -1.0f));
  rows.setArg(0, in), rows.setArg(1, rd), rows.setArg(2, rs), rows.setArg(3, w), rows.setArg(4, h);
  cs.setArg(0, rd), cs.setArg(1, gx), cs.setArg(2, w), cs.setArg(3, h);
  cd.setArg(0, rs), cd.setArg(1, gy), cd.setArg(2, w), cd.setArg(3, h);
  mag.setArg(0, gx), mag.setArg(1, gy), mag.setArg(2, out), mag.setArg(3, w), mag.setArg(4, h);
  for (cl::Kernel* k : {&rows, &cs, &cd, &mag})
    env().queue.enqueueNDRangeKernel(*k, cl::NullRange, stencil_global(w, h), cl::NDRange(16, 16));
  const std::vector<float> got = download(out, n);
  const double err = wl::max_rel_error(got, ref);
  INFO("max relative error " << err << ", bit differences " << wl::count_bit_differences(got.data(), ref.data(), n));
  CHECK(err <= 1e-5);
}

TEST_CASE("workloads_reference: jacobi.cl: 25 steps on a 66x66 grid equal jacobi_reference") {
  INFO("device: " << env().name);
  const int n = 66, iterations = 25;
  std::vector<float> grid;
  wl::jacobi_initial_grid(grid, n);
  CHECK(grid[5] == 1.0f);                                // top row
  CHECK(grid[static_cast<std::size_t>(n) * 3] == 0.0f);  // left column
  std::vector<float> ref = grid;
  wl::jacobi_reference(ref, n, iterations);

  cl::Kernel step(build("jacobi.cl"), "jacobi_step");
  cl::Buffer a = upload(grid), b = upload(std::vector<float>(grid.size(), -1.0f));
  step.setArg(2, n);
  for (int it = 0; it < iterations; ++it) {
    step.setArg(0, it % 2 ? b : a);
    step.setArg(1, it % 2 ? a : b);
    env().queue.enqueueNDRangeKernel(step, cl::NullRange, stencil_global(n, n), cl::NDRange(16, 16));
  }
  const std::vector<float> got = download(iterations % 2 ? b : a, grid.size());
  const std::size_t bits = wl::count_bit_differences(got.data(), ref.data(), got.size());
  INFO("bit differences: " << bits);
  CHECK(wl::max_rel_error(got, ref) <= 1e-6);
  if (bits) MESSAGE("jacobi_step is within 1e-6 of the reference but not bit-identical on " << env().name);
}

TEST_CASE("workloads_reference: matmul.cl: a 64x64 product equals matmul_reference") {
  INFO("device: " << env().name);
  const int n = 64;
  std::vector<float> a, b(static_cast<std::size_t>(n) * n), ref(b.size());
  wl::matpow_input(a, n);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) / 64.0f;
  wl::matmul_reference(a.data(), b.data(), ref.data(), n);

  cl::Kernel mm(build("matmul.cl"), "matmul_tiled");
  const auto geo = nat::matmul_geometry(mm, env().device, n);
  cl::Buffer da = upload(a), db = upload(b), dc = upload(std::vector<float>(ref.size(), -1.0f));
  mm.setArg(0, da), mm.setArg(1, db), mm.setArg(2, dc), mm.setArg(3, n);
  env().queue.enqueueNDRangeKernel(mm, cl::NullRange, geo.global, geo.local);
  const std::vector<float> got = download(dc, ref.size());
  const double err = wl::max_rel_error(got, ref);
  INFO("max relative error " << err);
  CHECK(err <= 1e-4);
}

TEST_CASE("workloads_reference: native Sobel: sync and async are bit-identical and match the reference") {
  INFO("device: " << env().name);
  const nat::SobelParams p{64, 48, 5, kKernelDir};
  const auto s = nat::run_sobel(env().device, p, nat::Mode::sync);
  const auto a = nat::run_sobel(env().device, p, nat::Mode::async);
  const std::size_t n = 64 * 48;
  REQUIRE(s.output.size() == n);
  REQUIRE(a.output.size() == n);
  CHECK(wl::count_bit_differences(s.output.data(), a.output.data(), n) == 0);
  CHECK(s.checksum == a.checksum);

  std::vector<float> frame(n), ref(n);
  double ref_checksum = 0;
  for (int i = 0; i < p.frames; ++i) {
    wl::generate_frame(frame.data(), p.width, p.height, i);
    wl::sobel_reference(frame.data(), ref.data(), p.width, p.height);
    ref_checksum += wl::host_sum(ref.data(), n);
  }
  CHECK(wl::max_rel_error(s.output, ref) <= 1e-5);
  CHECK(s.checksum == doctest::Approx(ref_checksum).epsilon(1e-5));
  for (const auto* r : {&s, &a}) {
    CHECK(r->seconds > 0);
    CHECK(r->kernel_seconds > 0);
    CHECK(r->h2d_seconds > 0);
    CHECK(r->d2h_seconds > 0);
  }
}

TEST_CASE("workloads_reference: native Jacobi: sync and async are bit-identical and match the reference") {
  INFO("device: " << env().name);
  // 30 iterations: the final grid is the third snapshot; 25: it takes its own D2H.
  for (int iterations : {30, 25}) {
    INFO("iterations: " << iterations);
    const nat::JacobiParams p{64, iterations, 10, kKernelDir};
    const auto s = nat::run_jacobi(env().device, p, nat::Mode::sync);
    const auto a = nat::run_jacobi(env().device, p, nat::Mode::async);
    REQUIRE(s.output.size() == 64u * 64u);
    REQUIRE(a.output.size() == 64u * 64u);
    CHECK(wl::count_bit_differences(s.output.data(), a.output.data(), s.output.size()) == 0);
    CHECK(s.checksum == a.checksum);

    std::vector<float> grid;
    wl::jacobi_initial_grid(grid, p.n);
    double ref_checksum = 0;
    for (int done = 0; done + p.copy_every <= iterations; done += p.copy_every) {
      wl::jacobi_reference(grid, p.n, p.copy_every);
      ref_checksum += wl::host_sum(grid.data(), grid.size());
    }
    wl::jacobi_reference(grid, p.n, iterations % p.copy_every);
    CHECK(wl::max_rel_error(s.output, grid) <= 1e-6);
    CHECK(s.checksum == doctest::Approx(ref_checksum).epsilon(1e-6));
    CHECK(s.d2h_seconds > 0);
    CHECK(a.kernel_seconds > 0);
  }
}

TEST_CASE("workloads_reference: native matrix power: sync and async are bit-identical and match the reference") {
  INFO("device: " << env().name);
  const nat::MatpowParams p{64, 4, kKernelDir};
  const auto s = nat::run_matpow(env().device, p, nat::Mode::sync);
  const auto a = nat::run_matpow(env().device, p, nat::Mode::async);
  const std::size_t n2 = 64 * 64;
  REQUIRE(s.output.size() == n2);
  REQUIRE(a.output.size() == n2);
  CHECK(wl::count_bit_differences(s.output.data(), a.output.data(), n2) == 0);
  CHECK(s.checksum == a.checksum);

  std::vector<float> A, P, next(n2);
  wl::matpow_input(A, p.n);
  P = A;
  double ref_checksum = 0;
  for (int k = 1; k <= p.products; ++k) {
    wl::matmul_reference(P.data(), A.data(), next.data(), p.n);
    P.swap(next);
    ref_checksum += wl::frobenius_norm(P.data(), n2);
  }
  const double err = wl::max_rel_error(s.output, P);
  INFO("max relative error " << err << ", checksum " << s.checksum << " vs " << ref_checksum);
  CHECK(err <= 1e-4);
  CHECK(s.checksum == doctest::Approx(ref_checksum).epsilon(1e-4));
  // The input keeps its powers of order one (no overflow or underflow over the products).
  CHECK(ref_checksum > 1.0);
  CHECK(ref_checksum < 1e4);
}

TEST_CASE("workloads_reference: native workloads reject bad parameters and missing kernels") {
  CHECK_THROWS_AS(nat::run_sobel(env().device, {0, 48, 5, kKernelDir}, nat::Mode::sync), hetflow::UsageError);
  CHECK_THROWS_AS(nat::run_jacobi(env().device, {64, 10, 0, kKernelDir}, nat::Mode::async), hetflow::UsageError);
  CHECK_THROWS_AS(nat::run_matpow(env().device, {72, 2, kKernelDir}, nat::Mode::sync), hetflow::UsageError);
  const std::string missing = HETFLOW_TEST_SOURCE_DIR "/no-such-kernel-dir";
  const std::string msg = error_message([&] { nat::run_sobel(env().device, {8, 8, 1, missing}, nat::Mode::sync); });
  CHECK(msg.find("sobel.cl") != std::string::npos);
  CHECK(msg.find("no-such-kernel-dir") != std::string::npos);
  CHECK_THROWS_AS(nat::locate_kernel_file("nothing.cl", missing), hetflow::FileNotFoundError);
}

TEST_CASE("workloads_reference: bench_workloads' copy bound: never below a direction alone, nor above both in turn") {
  // The H200 host's pinned rates (perf/RESULTS.md): 100 16K frames each way take at least
  // 53.1 GB / 50.8 GB/s with both directions at once.
  const double gb = 1e9, frames = 100 * 15360.0 * 8640 * 4;
  const bench::CopyRates h200{55.3 * gb, 55.4 * gb, 50.8 * gb};
  CHECK(bench::copy_seconds_bound(h200, frames, frames) == doctest::Approx(frames / (50.8 * gb)));
  // Directions run one after the other (both at once no faster than alternating): the sum.
  const bench::CopyRates serial{20 * gb, 10 * gb, 20 * gb / 3};
  CHECK(bench::copy_seconds_bound(serial, gb, gb) == doctest::Approx(0.05 + 0.1));
  // One direction only, or more bytes one way: never less than that direction alone.
  CHECK(bench::copy_seconds_bound(h200, 0, frames) == doctest::Approx(frames / (55.4 * gb)));
  CHECK(bench::copy_seconds_bound(h200, frames, 2 * frames) >= 2 * frames / (55.4 * gb));
  CHECK(bench::copy_seconds_bound(bench::CopyRates{}, gb, gb) == 0);

  // Measured on the device: positive rates, and a bound between the directions' times alone one
  // after the other and the slower of them.
  const double bytes = double(std::size_t{4} << 20);
  const bench::CopyRates r = bench::measure_copy_rates(env().device, std::size_t{4} << 20, 2);
  CHECK(r.h2d > 0);
  CHECK(r.d2h > 0);
  CHECK(r.both > 0);
  const double bound = bench::copy_seconds_bound(r, bytes, bytes);
  CHECK(bound >= std::max(bytes / r.h2d, bytes / r.d2h) * 0.9999);
  CHECK(bound <= (bytes / r.h2d + bytes / r.d2h) * 1.0001);
}

TEST_CASE("workloads_reference: generate_frame is deterministic, in range and moves") {
  const int w = 97, h = 31;
  std::vector<float> f0(w * h), f0b(w * h), f1(w * h);
  wl::generate_frame(f0.data(), w, h, 0);
  wl::generate_frame(f0b.data(), w, h, 0);
  wl::generate_frame(f1.data(), w, h, 1);
  CHECK(wl::count_bit_differences(f0.data(), f0b.data(), f0.size()) == 0);
  CHECK(wl::count_bit_differences(f0.data(), f1.data(), f0.size()) > f0.size() / 2);
  float lo = 1e9f, hi = -1e9f;
  for (float v : f0) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(lo >= 0.0f);
  CHECK(hi <= 255.0f);
  CHECK(hi - lo > 100.0f);  // a real texture, not a flat frame
}

TEST_CASE(
    "workloads_reference: a frame of 16 MiB (streaming stores) has the pixels of a smaller one (ordinary stores)") {
  // A pixel depends on its coordinates and the index only: a frame one row shorter, below the
  // streaming threshold, must hold the same rows.
  const int w = 2048, h = 2048;
  std::vector<float> big(std::size_t(w) * h), small(std::size_t(w) * (h - 1));
  wl::generate_frame(big.data(), w, h, 5);
  wl::generate_frame(small.data(), w, h - 1, 5);
  CHECK(wl::count_bit_differences(big.data(), small.data(), small.size()) == 0);
  std::vector<float> odd(std::size_t(w + 3) * h);  // rows that start off 16-byte alignment
  wl::generate_frame(odd.data(), w + 3, h, 5);
  std::size_t differ = 0;
  for (int y = 0; y < h - 1; ++y)
    differ += wl::count_bit_differences(odd.data() + std::size_t(y) * (w + 3), small.data() + std::size_t(y) * w, w);
  CHECK(differ == 0);
}

TEST_CASE("workloads_reference: Y4M: three frames round-trip through Y4mWriter and Y4mReader") {
  TempFile file("roundtrip");
  const int w = 20, h = 12;
  std::vector<std::vector<float>> frames(3, std::vector<float>(w * h));
  for (int i = 0; i < 3; ++i) wl::generate_frame(frames[i].data(), w, h, i);
  frames[1][0] = -7.0f;   // clamped to 0
  frames[1][1] = 300.0f;  // clamped to 255
  frames[1][2] = NAN;     // written as 0
  {
    wl::Y4mWriter writer(file.path, w, h);
    for (const auto& f : frames) writer.write_luma(f.data());
    CHECK(writer.frames_written() == 3);
    writer.close();
  }
  // Header, then per frame "FRAME\n", the Y plane and two 10x6 chroma planes.
  const std::string bytes = read_bytes(file.path);
  CHECK(bytes.rfind("YUV4MPEG2 W20 H12 ", 0) == 0);
  CHECK(bytes.find("C420jpeg") != std::string::npos);
  const std::size_t header = bytes.find('\n') + 1;
  CHECK(bytes.size() == header + 3 * (6 + w * h + 2 * 10 * 6));
  CHECK(static_cast<unsigned char>(bytes.back()) == 128);

  wl::Y4mReader reader(file.path);
  CHECK(reader.width() == w);
  CHECK(reader.height() == h);
  CHECK(reader.colour_space() == "420jpeg");
  CHECK(reader.timing_tags() == wl::Y4mWriter::kDefaultTimingTags);
  std::vector<float> got(w * h);
  for (int i = 0; i < 3; ++i) {
    INFO("frame " << i);
    REQUIRE(reader.read_luma(got.data()));
    int mismatches = 0;
    for (int j = 0; j < w * h; ++j) {
      const float v = frames[i][j];
      const float expect = std::isnan(v) ? 0.0f : std::round(std::clamp(v, 0.0f, 255.0f));
      mismatches += got[j] != expect;
    }
    CHECK(mismatches == 0);
  }
  CHECK_FALSE(reader.read_luma(got.data()));
  CHECK(reader.frames_read() == 3);
}

TEST_CASE("workloads_reference: Y4M: other colour spaces, frame parameters and header tags are read") {
  TempFile file("c444");
  const int w = 3, h = 2;
  // C444: two full-size chroma planes; FRAME lines may carry parameters; X tags are ignored.
  std::string bytes = "YUV4MPEG2 W3 H2 F30000:1001 It A0:0 C444 XYSCSS=444\n";
  for (int f = 0; f < 2; ++f) {
    bytes += f ? "FRAME Ixyz\n" : "FRAME\n";
    for (int i = 0; i < w * h; ++i) bytes += static_cast<char>(10 * f + i);
    bytes += std::string(2 * w * h, static_cast<char>(200));
  }
  write_bytes(file.path, bytes);
  wl::Y4mReader reader(file.path);
  CHECK(reader.colour_space() == "444");
  CHECK(reader.timing_tags() == "F30000:1001 It A0:0");  // what a writer of the filtered video repeats
  std::vector<float> got(w * h);
  for (int f = 0; f < 2; ++f) {
    REQUIRE(reader.read_luma(got.data()));
    for (int i = 0; i < w * h; ++i) CHECK(got[i] == static_cast<float>(10 * f + i));
  }
  CHECK_FALSE(reader.read_luma(got.data()));

  // Cmono: no chroma at all.
  write_bytes(file.path,
              std::string("YUV4MPEG2 H1 W2 Cmono\nFRAME\n") + char(1) + char(2) + "FRAME\n" + char(3) + char(4));
  wl::Y4mReader mono(file.path);
  CHECK(mono.timing_tags() == wl::Y4mWriter::kDefaultTimingTags);  // none given
  std::vector<float> two(2);
  REQUIRE(mono.read_luma(two.data()));
  CHECK(two == std::vector<float>{1, 2});
  REQUIRE(mono.read_luma(two.data()));
  CHECK(two == std::vector<float>{3, 4});
  CHECK_FALSE(mono.read_luma(two.data()));

  // Malformed timing tags are not repeated: the writer's default stands for each.
  write_bytes(file.path, std::string("YUV4MPEG2 W2 H1 F25 Iq A1:x Cmono\nFRAME\n") + char(1) + char(2));
  CHECK(wl::Y4mReader(file.path).timing_tags() == wl::Y4mWriter::kDefaultTimingTags);
  write_bytes(file.path, std::string("YUV4MPEG2 W2 H1 F0:1 Im A0:0 Cmono\nFRAME\n") + char(1) + char(2));
  CHECK(wl::Y4mReader(file.path).timing_tags() == "F25:1 Im A0:0");
}

TEST_CASE("workloads_reference: Y4M: malformed files throw hetflow::Error naming the file and the problem") {
  TempFile file("bad");
  std::vector<float> dst(20 * 12);

  SUBCASE("truncated frame") {
    {
      wl::Y4mWriter writer(file.path, 20, 12);
      std::vector<float> f(20 * 12, 50.0f);
      writer.write_luma(f.data());
      writer.write_luma(f.data());
    }
    std::string bytes = read_bytes(file.path);
    bytes.resize(bytes.size() - 30);  // the second frame loses part of its chroma
    write_bytes(file.path, bytes);
    wl::Y4mReader reader(file.path);
    CHECK(reader.read_luma(dst.data()));
    const std::string msg = error_message([&] { reader.read_luma(dst.data()); });
    CHECK(msg.find(file.path) != std::string::npos);
    CHECK(msg.find("truncated") != std::string::npos);
    wl::Y4mReader again(file.path);
    CHECK(again.read_luma(dst.data()));
    CHECK_THROWS_AS(again.read_luma(dst.data()), hetflow::Error);

    bytes.resize(bytes.find("FRAME") + 6 + 100);  // the first frame's luma cut short
    write_bytes(file.path, bytes);
    wl::Y4mReader short_reader(file.path);
    const std::string msg2 = error_message([&] { short_reader.read_luma(dst.data()); });
    CHECK(msg2.find(file.path) != std::string::npos);
    CHECK(msg2.find("truncated frame 0") != std::string::npos);
  }
  SUBCASE("bad magic") {
    write_bytes(file.path, "YUV4MPEG W20 H12 C420jpeg\nFRAME\n");
    const std::string msg = error_message([&] { wl::Y4mReader r(file.path); });
    CHECK(msg.find(file.path) != std::string::npos);
    CHECK(msg.find("magic") != std::string::npos);
    CHECK_THROWS_AS(wl::Y4mReader(file.path), hetflow::Error);
  }
  SUBCASE("missing width or height") {
    write_bytes(file.path, "YUV4MPEG2 H12 C420jpeg\n");
    std::string msg = error_message([&] { wl::Y4mReader r(file.path); });
    CHECK(msg.find(file.path) != std::string::npos);
    CHECK(msg.find("width") != std::string::npos);
    write_bytes(file.path, "YUV4MPEG2 W20 Hx C420jpeg\n");
    msg = error_message([&] { wl::Y4mReader r(file.path); });
    CHECK(msg.find("height") != std::string::npos);
  }
  SUBCASE("unsupported colour space, bad frame header, missing file") {
    write_bytes(file.path, "YUV4MPEG2 W20 H12 C420p10\n");
    CHECK(error_message([&] { wl::Y4mReader r(file.path); }).find("C420p10") != std::string::npos);
    write_bytes(file.path, "YUV4MPEG2 W2 H2 Cmono\nFRAMX\n1234");
    wl::Y4mReader r(file.path);
    CHECK(error_message([&] { r.read_luma(dst.data()); }).find("frame header") != std::string::npos);
    const std::string gone = file.path + ".missing";
    CHECK(error_message([&] { wl::Y4mReader m(gone); }).find(gone) != std::string::npos);
  }
}
