// The workloads written on hetflow (tools/workloads/pipelines.*): each equals its CPU reference on
// small sizes under both policies, and is bit-identical to the hand-written native OpenCL version.
#include <doctest/doctest.h>
#include <hetflow/hetflow.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <thread>
#include <utility>

#include "native/native_workloads.hpp"
#include "process.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/frames.hpp"
#include "workloads/pipelines.hpp"

using namespace hetflow;
namespace wl = hetflow::workloads;

namespace {
const Policy policies[] = {Policy::sync, Policy::async};
Controller make(Policy p) {
  ControllerOptions o;
  o.policy = p;
  return Controller(o);
}
const std::string kernels = std::string(HETFLOW_TEST_SOURCE_DIR) + "/kernels_cl";
// An empty directory of that name under the system's temporary directory.
std::filesystem::path fresh_dir(const char* name) {
  const auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}
bool identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && wl::count_bit_differences(a.data(), b.data(), a.size()) == 0;
}
}  // namespace

TEST_CASE("workloads on hetflow: Sobel equals the CPU reference and the native version") {
  const int w = 67, h = 45, frames = 5;
  std::vector<float> last(std::size_t(w) * h), ref(last.size());
  wl::generate_frame(last.data(), w, h, frames - 1);
  wl::sobel_reference(last.data(), ref.data(), w, h);
  const auto native = native::run_sobel(select_device().device.device, {w, h, frames, kernels}, native::Mode::async);
  for (Policy p : policies) {
    CAPTURE(to_string(p));
    Controller c(make(p));
    const auto r = wl::sobel(c, {w, h, frames, {}, {}});
    CHECK(r.frames == frames);
    CHECK(wl::max_rel_error(r.output, ref) <= 1e-5);
    CHECK(identical(r.output, native.output));
    CHECK(r.checksum == native.checksum);
  }
}

TEST_CASE("workloads on hetflow: Sobel with other slot and host-thread counts stays bit-identical") {
  // Frames outnumber the slots, so every slot is reused and the native version's consumption lag
  // (slots - 1) wraps; 1 slot makes each frame wait for the one before.
  const int w = 50, h = 37, frames = 7;
  std::vector<float> last(std::size_t(w) * h), ref(last.size());
  wl::generate_frame(last.data(), w, h, frames - 1);
  wl::sobel_reference(last.data(), ref.data(), w, h);
  const auto device = select_device().device.device;
  const auto sync = native::run_sobel(device, {w, h, frames, kernels, 0, 1}, native::Mode::sync);
  CHECK(wl::max_rel_error(sync.output, ref) <= 1e-5);
  for (const auto& [slots, threads] : {std::pair{1, 1}, std::pair{3, 2}, std::pair{5, 1}, std::pair{8, 0}}) {
    CAPTURE(slots);
    CAPTURE(threads);
    const auto native = native::run_sobel(device, {w, h, frames, kernels, slots, threads}, native::Mode::async);
    CHECK(identical(native.output, sync.output));
    CHECK(native.checksum == sync.checksum);
    for (Policy p : policies) {
      CAPTURE(to_string(p));
      Controller c(make(p));
      const auto r = wl::sobel(c, {w, h, frames, {}, {}, slots, threads});
      CHECK(identical(r.output, sync.output));
      CHECK(r.checksum == sync.checksum);
    }
  }
  Controller c(make(Policy::async));
  CHECK_THROWS_WITH_AS(wl::sobel(c, {w, h, frames, {}, {}, -1, 0}), doctest::Contains("--slots"), UsageError);
  CHECK_THROWS_AS(native::run_sobel(device, {w, h, frames, kernels, 2, -3}, native::Mode::async), UsageError);
}

TEST_CASE("workloads on hetflow: Jacobi equals the CPU reference and the native version") {
  const int n = 66;
  // 25: the final grid is fetched by one more D2H. The snapshot intervals make hetflow's version
  // rotate 3 grids (10), 2 (1 and 3), 4 (6) and 5 (12).
  const std::pair<int, int> runs[] = {{30, 10}, {25, 10}, {7, 1}, {10, 3}, {13, 6}, {24, 12}};
  for (const auto& [iterations, copy_every] : runs) {
    std::vector<float> ref;
    wl::jacobi_initial_grid(ref, n);
    wl::jacobi_reference(ref, n, iterations);
    const auto native =
        native::run_jacobi(select_device().device.device, {n, iterations, copy_every, kernels}, native::Mode::sync);
    for (Policy p : policies) {
      CAPTURE(to_string(p));
      CAPTURE(iterations);
      CAPTURE(copy_every);
      Controller c(make(p));
      const auto r = wl::jacobi(c, n, iterations, copy_every);
      CHECK(wl::max_rel_error(r.output, ref) <= 1e-6);
      CHECK(identical(r.output, native.output));
      CHECK(r.checksum == native.checksum);
    }
  }
}

TEST_CASE("workloads on hetflow: matrix power equals the CPU reference and the native version") {
  const int n = 64, products = 4;
  std::vector<float> a, ref, tmp(std::size_t(n) * n);
  wl::matpow_input(a, n);
  ref = a;
  for (int k = 0; k < products; ++k) {
    wl::matmul_reference(ref.data(), a.data(), tmp.data(), n);
    ref.swap(tmp);
  }
  const auto native = native::run_matpow(select_device().device.device, {n, products, kernels}, native::Mode::async);
  for (Policy p : policies) {
    CAPTURE(to_string(p));
    Controller c(make(p));
    const auto r = wl::matpow(c, n, products);
    CHECK(wl::max_rel_error(r.output, ref) <= 1e-4);
    CHECK(identical(r.output, native.output));
    CHECK(r.checksum == native.checksum);
  }
  Controller c(make(Policy::async));
  CHECK_THROWS_WITH_AS(wl::matpow(c, 60, 2), doctest::Contains("multiple of 16"), UsageError);
}

TEST_CASE("workloads on hetflow: Sobel reads and writes .y4m files") {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir("hetflow-y4m-sobel");
  const std::string in = (dir / "in.y4m").string(), out = (dir / "out.y4m").string();
  const int w = 40, h = 24, frames = 3;
  std::vector<std::vector<float>> input(frames, std::vector<float>(std::size_t(w) * h));
  {
    wl::Y4mWriter writer(in, w, h, "F30000:1001 It A16:15");  // NTSC, interlaced: the output keeps them
    for (int i = 0; i < frames; ++i) {
      wl::generate_frame(input[i].data(), w, h, i);
      for (auto& v : input[i]) v = std::round(v);  // what an 8-bit file can hold
      writer.write_luma(input[i].data());
    }
    writer.close();
  }
  for (Policy p : policies) {
    CAPTURE(to_string(p));
    Controller c(make(p));
    const auto r = wl::sobel(c, {0, 0, 0, in, out});  // size and frame count come from the file
    CHECK(r.frames == frames);
    wl::Y4mReader reader(out);
    CHECK(reader.width() == w);
    CHECK(reader.height() == h);
    CHECK(reader.timing_tags() == "F30000:1001 It A16:15");
    std::vector<float> got(std::size_t(w) * h), ref(got.size());
    for (int i = 0; i < frames; ++i) {
      REQUIRE(reader.read_luma(got.data()));
      wl::sobel_reference(input[i].data(), ref.data(), w, h);
      for (std::size_t k = 0; k < ref.size(); ++k) {
        const float expected = std::min(255.0f, std::round(ref[k]));
        if (std::abs(got[k] - expected) > 1.0f)
          FAIL_CHECK("frame " << i << " pixel " << k << ": " << got[k] << " vs " << expected);
      }
    }
    CHECK_FALSE(reader.read_luma(got.data()));
  }
  fs::remove_all(dir);
}

TEST_CASE("hetflow run: the default job prints its table, and bad options are clear errors") {
  const std::string cli = HETFLOW_CLI_PATH;
  auto r = test::run_command(cli + " run sobel --size 160x90 --frames 3 --verify");
  CHECK(r.status == 0);
  std::string out = r.output;
  CHECK(out.find("async gain") != std::string::npos);
  CHECK(out.find("bit-identical: yes") != std::string::npos);
  CHECK(out.find("verify: max relative error") != std::string::npos);
  CHECK(out.find("median of 3 runs per policy, alternating") != std::string::npos);  // the default comparison
  r = test::run_command(cli + " run sobel --size 64x32 --frames 2 --repeat 1");
  CHECK(r.status == 0);
  CHECK(r.output.find("median of") == std::string::npos);
  r = test::run_command(cli + " run sobel --repeat 0");
  CHECK(r.status != 0);
  CHECK(r.output.find("--repeat") != std::string::npos);
  r = test::run_command(cli + " run sobel --size 12q");
  CHECK(r.status != 0);
  out = r.output;
  CHECK(out.find("--size '12q'") != std::string::npos);
  r = test::run_command(cli + " run sobel --size 64x32 --frames 5 --slots 3 --host-threads 1 --verify");
  CHECK(r.status == 0);
  CHECK(r.output.find("bit-identical: yes") != std::string::npos);
  CHECK(r.output.find("3 slots") != std::string::npos);
  r = test::run_command(cli + " run sobel --slots 0");
  CHECK(r.status != 0);
  out = r.output;
  CHECK(out.find("--slots") != std::string::npos);
}

TEST_CASE("hetflow run refuses what it would ignore, lose or misread, and names it") {
  namespace fs = std::filesystem;
  const std::string cli = HETFLOW_CLI_PATH;
  const fs::path dir = fresh_dir("hetflow-cli-refusals");
  const std::string d = dir.string();
  auto refused = [&](const std::string& args, const std::string& says) {
    auto r = test::run_command(cli + " " + args);
    INFO(args);
    INFO(r.output);
    CHECK(r.status != 0);
    CHECK(r.output.find(says) != std::string::npos);
  };
  refused("bogus", "unknown command 'bogus'");
  refused("--bogus", "unknown option '--bogus'");
  refused("run sobel --size ''", "--size: an empty value");
  refused("run sobel --dump ''", "--dump: an empty value");
  refused("run jacobi --output " + d + "/j.y4m", "--output is for sobel; jacobi does not read it");
  CHECK(!fs::exists(dir / "j.y4m"));
  refused("run sobel --scheduler dynamic:8", "--scheduler is for the loop workloads");
  refused("run spmv --slots 2", "--slots is for sobel");
  refused("run mandelbrot --fast-math", "--fast-math is for nbody and barneshut");
  refused("run mandelbrot --repeat 2", "--repeat is for sobel, jacobi and matpow");
  refused("run spmv --size 27", "spmv takes an R-MAT scale (2^scale rows), a whole number from 1 to 26");
  refused("run mandelbrot --policy both", "a loop runs under one policy");
  refused("run mandelbrot --devices cpu,", "--devices 'cpu,': an empty element");
  refused("run sobel --size 64 --frames 1 --dump " + d + "/x.json --trace " + d + "/x.json",
          "--dump and --trace name the same file");
  CHECK(!fs::exists(dir / "x.json"));

  // An output over its own input is refused before anything is opened: the input stays whole.
  const std::string clip = d + "/clip.y4m";
  REQUIRE(test::run_command(cli + " run sobel --size 32x16 --frames 2 --policy sync --output " + clip).status == 0);
  const auto size = fs::file_size(clip);
  refused("run sobel --input " + clip + " --output " + clip, "--output '" + clip + "' is the --input file");
  CHECK(fs::file_size(clip) == size);

  // A file that cannot be read is a file's failure (1), as for `dump` and `report`, not a mistake on
  // the command line (2): the message names it and why.
  {
    auto r = test::run_command(cli + " run sobel --input " + d + "/missing.y4m");
    INFO(r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find("Y4M file '" + d + "/missing.y4m': cannot open for reading: No such file") !=
          std::string::npos);
  }

  // A frame size no kernel can index is named, with the file, before anything is allocated.
  std::ofstream(d + "/huge.y4m") << "YUV4MPEG2 W99999999 H99999999 F25:1\nFRAME\n";
  refused("run sobel --input " + d + "/huge.y4m", "are larger than hetflow reads");

  // A loop runs under the policy and kernel queues asked for.
  auto r = test::run_command(cli + " run mandelbrot --size 32 --calls 1 --policy sync --dump " + d + "/m.json");
  REQUIRE(r.status == 0);
  std::ifstream m(d + "/m.json");
  const std::string dump((std::istreambuf_iterator<char>(m)), std::istreambuf_iterator<char>());
  CHECK(dump.find("\"policy\": \"sync\"") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("hetflow run refuses two of its files that are one, however spelt, --dump's DOT beside it included") {
  namespace fs = std::filesystem;
  const std::string cli = HETFLOW_CLI_PATH;
  const fs::path dir = fresh_dir("hetflow-cli-same-file");
  // Relative paths, from the directory: "./ov.json" and "ov.json" are one file that does not exist yet.
  auto refused = [&](const std::string& args, const std::string& says) {
    auto r = test::run_command("cd " + dir.string() + " && " + cli + " run sobel --frames 1 " + args);
    INFO(args);
    INFO(r.output);
    CHECK(r.status != 0);
    CHECK(r.output.find(says) != std::string::npos);
    for (const auto& entry : fs::directory_iterator(dir)) CHECK(entry.path().filename() == "in.y4m");
  };
  refused("--size 64 --dump ./ov.json --trace ov.json",
          "--dump and --trace name the same file ('./ov.json', 'ov.json')");
  refused("--size 64 --dump sub/../ov.json --output ov.json", "--output and --dump name the same file");
  refused("--size 64 --dump s3.json --trace s3.dot",
          "--dump 's3.json' (its Graphviz DOT, 's3.dot') and --trace 's3.dot' are one file");
  refused("--size 64 --dump s3.json --output ./s3.flow.dot", "(its flow graph's DOT, 's3.flow.dot') are one file");
  // HETFLOW_DUMP's and HETFLOW_TRACE's files, one per controller (the second numbered): the sync
  // controller's dump was lost under --dump's (a user's trial, 2026-11-29).
  for (const auto& [env, args] :
       {std::pair{"HETFLOW_DUMP=e.json", "--dump ./e.json"}, std::pair{"HETFLOW_DUMP=e.json", "--dump e.2.json"},
        std::pair{"HETFLOW_TRACE=sub/../t.json", "--trace t.json"}}) {
    auto r =
        test::run_command("cd " + dir.string() + " && " + env + " " + cli + " run sobel --frames 1 --size 64 " + args);
    INFO(env << " " << args << ": " << r.output);
    CHECK(r.status == 2);
    CHECK(r.output.find("has a controller of this run write") != std::string::npos);
    for (const auto& entry : fs::directory_iterator(dir)) CHECK(entry.path().filename() == "in.y4m");
  }
  std::ofstream(dir / "in.y4m") << "YUV4MPEG2 W8 H8 F25:1\n";
  refused("--input in.y4m --output ./in.y4m", "--output './in.y4m' is the --input file");
  refused("--input in.y4m --trace ../" + dir.filename().string() + "/in.y4m", "is the --input file");
  fs::remove(dir / "in.y4m");
  fs::remove_all(dir);
}

TEST_CASE("hetflow exits 2 for every mistake on the command line, 1 for a run or file that fails, 0 for --help") {
  const std::string cli = HETFLOW_CLI_PATH;
  for (const auto& [args, status] :
       {std::pair{"", 2}, std::pair{"bogus", 2}, std::pair{"--bogus", 2}, std::pair{"run sobel --bogus", 2},
        std::pair{"run sobel --frames 0", 2}, std::pair{"run sobel --frames", 2}, std::pair{"run sobel --size 0", 2},
        std::pair{"run matpow --size 60 --products 1", 2}, std::pair{"report", 2}, std::pair{"dump", 2},
        std::pair{"report /nonexistent-hetflow-dir/t.json", 1},
        std::pair{"run sobel --size 64 --frames 1 --policy sync --dump "
                  "/nonexistent-hetflow-dir/x.json",
                  1},
        // What only the device refuses is not the command line's mistake.
        std::pair{"run sobel --size 99999999x99999999 --frames 1 --policy sync", 1}, std::pair{"--help", 0},
        std::pair{"run --help", 0}, std::pair{"--version", 0}}) {
    const auto r = test::run_command(cli + " " + args);
    INFO(args);
    INFO(r.output);
    CHECK(r.status == status);
  }
  const auto help = test::run_command(cli + " --help");
  CHECK(help.output.find("Exit status: 0 on success") != std::string::npos);
  // A HETFLOW_DUMP or HETFLOW_TRACE that cannot be written fails the run, as --dump does (0 before).
  for (const char* variable : {"HETFLOW_DUMP", "HETFLOW_TRACE"}) {
    CAPTURE(variable);
    const auto r = test::run_command(std::string("env ") + variable + "=/nonexistent-hetflow-dir/x.json " + cli +
                                     " run sobel --size 64 --frames 1 --policy sync");
    INFO(r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find("could not write") != std::string::npos);
    CHECK(r.output.find("file(s) of HETFLOW_DUMP or HETFLOW_TRACE could not be written") != std::string::npos);
  }
}

TEST_CASE("hetflow run --input: --size is refused, too many --frames named, only the frames run are read") {
  namespace fs = std::filesystem;
  const std::string cli = HETFLOW_CLI_PATH;
  const fs::path dir = fresh_dir("hetflow-cli-input");
  const std::string in = (dir / "in.y4m").string(), trunc = (dir / "trunc.y4m").string();
  const int w = 32, h = 16;
  for (const auto& path : {in, trunc}) {
    wl::Y4mWriter writer(path, w, h);
    std::vector<float> frame(std::size_t(w) * h);
    for (int i = 0; i < 5; ++i) {
      wl::generate_frame(frame.data(), w, h, i);
      writer.write_luma(frame.data());
    }
    writer.close();
  }
  fs::resize_file(trunc, fs::file_size(trunc) - 10);  // frame 4, the fifth, loses its end
  auto r = test::run_command(cli + " run sobel --input " + in + " --size 1080p --frames 2");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(r.output.find("--size '1080p' and --input '" + in + "': the frames' size comes from the file") !=
        std::string::npos);
  r = test::run_command(cli + " run sobel --input " + in + " --frames 10");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(r.output.find("--frames 10: --input '" + in + "' holds only 5 frames") != std::string::npos);
  r = test::run_command(cli + " run sobel --policy sync --input " + trunc + " --frames 3 --verify");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("3 frames from " + trunc) != std::string::npos);
  r = test::run_command(cli + " run sobel --policy sync --input " + trunc);
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("truncated frame 4") != std::string::npos);
  // A header and no frame: the file's fault (status 1, as a truncated one), named.
  const std::string empty = (dir / "empty.y4m").string();
  { std::ofstream(empty) << "YUV4MPEG2 W64 H48 F25:1 Ip A1:1 C420jpeg\n"; }
  r = test::run_command(cli + " run sobel --policy sync --input " + empty);
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("Y4M file '" + empty + "': no frames after its header") != std::string::npos);
  r = test::run_command(cli + " run sobel --policy sync --input " + in);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("5 frames from " + in) != std::string::npos);

  Controller c(make(Policy::sync));
  CHECK_THROWS_WITH_AS(wl::sobel(c, {0, 0, 6, in, ""}), doctest::Contains("6 frames asked for, but"), UsageError);
  CHECK(wl::sobel(c, {0, 0, 3, trunc, ""}).frames == 3);
  fs::remove_all(dir);
}

TEST_CASE("hetflow run names --device or --devices as where a selection that matches nothing came from") {
  const std::string cli = HETFLOW_CLI_PATH;
  for (const auto& [args, origin] :
       {std::pair{" run sobel --size 64 --frames 1 --device nosuch", "device selection 'nosuch' (from --device)"},
        std::pair{" run mandelbrot --size 32 --calls 1 --device nosuch", "device selection 'nosuch' (from --device)"},
        std::pair{" run mandelbrot --size 32 --calls 1 --devices cpu,nosuch",
                  "device selection 'nosuch' (from --devices)"}}) {
    const auto r = test::run_command(cli + args);
    INFO(args);
    INFO(r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find(origin) != std::string::npos);
    CHECK(r.output.find("from the program") == std::string::npos);
  }
  ControllerOptions o;
  o.device = "nosuch";
  CHECK_THROWS_WITH_AS(Controller{o}, doctest::Contains("(from the program)"), DeviceError);
}

TEST_CASE("hetflow run ended by SIGINT or SIGTERM removes its --output rather than leave it cut off mid-frame") {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir("hetflow-cli-interrupted");
  const std::string out = (dir / "out.y4m").string(), log = (dir / "log.txt").string();
  const std::uintmax_t frame_bytes = 128 * 128 * 3 / 2;
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    const pid_t pid = test::start_process({HETFLOW_CLI_PATH, "run", "sobel", "--size", "128", "--frames", "1000000",
                                           "--policy", "async", "--output", out},
                                          {}, log);
    REQUIRE(pid > 0);
    // The signal comes once frames are being written: mid-run, most likely mid-frame.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    std::error_code ec;
    while (!(fs::file_size(out, ec) > 5 * frame_bytes && !ec) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const bool writing = fs::file_size(out, ec) > 5 * frame_bytes && !ec;
    ::kill(pid, writing ? sig : SIGKILL);
    const int status = test::wait_status(pid);
    std::ifstream said(log);
    INFO(std::string((std::istreambuf_iterator<char>(said)), std::istreambuf_iterator<char>()));
    REQUIRE(writing);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK(!fs::exists(out));
  }
  fs::remove_all(dir);
}

TEST_CASE("hetflow run writes --dump and --trace of the run that failed, and says so") {
  namespace fs = std::filesystem;
  const std::string cli = HETFLOW_CLI_PATH;
  const fs::path dir = fresh_dir("hetflow-cli-failed-dumps");
  for (const auto& [kernel, workload] :
       {std::pair{"sobel_col_diff", "sobel --size 64x32 --frames 3"},
        std::pair{"mandelbrot_rows", "mandelbrot --size 32 --calls 1 --scheduler static:1"}}) {
    CAPTURE(workload);
    const std::string base = (dir / "f").string();
    auto r = test::run_command("HETFLOW_DEBUG_FAULT_KERNEL=" + std::string(kernel) + " " + cli + " run " + workload +
                               " --policy async --dump " + base + ".json --trace " + base + ".trace.json");
    INFO(r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find("the run failed; its dumps:") != std::string::npos);
    CHECK(fs::exists(base + ".json"));
    CHECK(fs::exists(base + ".trace.json"));
    fs::remove(base + ".json");
    fs::remove(base + ".trace.json");
  }
  fs::remove_all(dir);
}

TEST_CASE("hetflow run LOOP ends its last line, so an error after it starts a line of its own") {
  const std::string cli = HETFLOW_CLI_PATH;
  const std::string args = " run mandelbrot --size 32 --calls 1 --cpu-workers 1 --dump /nonexistent-hetflow-dir/x.json";
  // stdout alone: its last line is the scheduler's name, ended.
  auto r = test::run_command("{ " + cli + args + " 2>/dev/null; }");
  INFO(r.output);
  CHECK(r.output.find("\n\nlogfit\n") != std::string::npos);
  CHECK((!r.output.empty() && r.output.back() == '\n'));
  r = test::run_command(cli + args);
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("logfit\nhetflow: cannot write dump '/nonexistent-hetflow-dir/x.json'") != std::string::npos);
}
