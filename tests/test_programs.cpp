// Programs: building .cl files from kernels_cl/ and from strings, the cache, and the errors for a
// failed build, a missing file and an unknown kernel name.
#include <doctest/doctest.h>
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace hetflow;

namespace {
struct Fixture {
  Fixture() : choice(select_device()), context(choice.device.device), cache(context, choice.device.device) {}
  DeviceChoice choice;
  cl::Context context;
  ProgramCache cache;
};
}  // namespace

TEST_CASE("a .cl file of kernels_cl/ builds and lists its kernels") {
  Fixture f;
  auto program = f.cache.from_file("hetflow_test.cl");
  CHECK(program->label().find("kernels_cl/hetflow_test.cl") != std::string::npos);
  const auto& names = program->kernel_names();
  CHECK(std::find(names.begin(), names.end(), "copy_loop") != names.end());
  auto k = program->kernel("copy_loop");
  CHECK(k.num_args() == 4);
  CHECK(k.arg(0).is_buffer());
  CHECK(k.arg(0).type_name == "float*");
  CHECK(k.arg(2).type_name == "int");
  CHECK(k.arg(2).name == "n");
}

TEST_CASE("the cache returns the same program for the same file and options") {
  Fixture f;
  auto a = f.cache.from_file("hetflow_test.cl");
  auto b = f.cache.from_file("hetflow_test.cl");
  CHECK(a.get() == b.get());
  auto c = f.cache.from_file("hetflow_test.cl", "-DVARIANT=1");
  CHECK(c.get() != a.get());
  CHECK(f.cache.from_file("hetflow_test.cl", "-DVARIANT=1").get() == c.get());
  const char* src = "__kernel void twice(__global int* x) { x[get_global_id(0)] *= 2; }";
  CHECK(f.cache.from_source(src).get() == f.cache.from_source(src).get());
  CHECK(f.cache.size() == 3);
  // The same kernel object comes back too.
  CHECK(a->kernel("mix_inputs").handle()() == b->kernel("mix_inputs").handle()());
}

TEST_CASE("a build error carries the device, the file and the compiler's line") {
  Fixture f;
  const std::string src =
      "__kernel void broken(__global float* x) {\n"
      "  x[0] = undeclared_variable;\n"
      "}\n";
  try {
    f.cache.from_source(src, "", "broken.cl");
    FAIL("no BuildError");
  } catch (const BuildError& e) {
    CHECK(e.device == f.choice.device.name);
    CHECK(e.file == "broken.cl");
    CHECK(e.log.find("undeclared_variable") != std::string::npos);
    CHECK(e.log.find(":2:") != std::string::npos);  // the line the compiler complains about
    // At the user's file, not at the copy PoCL compiled under its cache.
    CHECK(e.log.find("kcache/tempfile_") == std::string::npos);
    if (f.choice.device.platform_name == "Portable Computing Language")  // NVIDIA's log says "<kernel>:2:"
      CHECK(e.log.find("broken.cl:2:") != std::string::npos);
    const std::string msg = e.what();
    CHECK(msg.find(f.choice.device.name) != std::string::npos);
    CHECK(msg.find("broken.cl") != std::string::npos);
  }
}

TEST_CASE("a missing file names every path searched") {
  Fixture f;
  ::setenv("HETFLOW_KERNEL_PATH", "/tmp/hetflow-nowhere-a:/tmp/hetflow-nowhere-b", 1);
  try {
    f.cache.from_file("no_such_kernels.cl");
    FAIL("no error");
  } catch (const FileNotFoundError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("no_such_kernels.cl") != std::string::npos);
    CHECK(msg.find("/tmp/hetflow-nowhere-a/no_such_kernels.cl") != std::string::npos);
    CHECK(msg.find("/tmp/hetflow-nowhere-b/no_such_kernels.cl") != std::string::npos);
    CHECK(msg.find("kernels_cl/no_such_kernels.cl") != std::string::npos);
  }
  ::unsetenv("HETFLOW_KERNEL_PATH");
  // A directory of the name is found but is not a file: said so. An empty name is refused as such.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "hetflow-a-directory.cl";
  fs::create_directories(dir);
  CHECK_THROWS_WITH_AS(f.cache.from_file(dir.string()), doctest::Contains((dir.string() + " (a directory)").c_str()),
                       FileNotFoundError);
  fs::remove_all(dir);
  CHECK_THROWS_WITH_AS(f.cache.from_file(""), "kernel file: the name is empty", UsageError);
}

TEST_CASE("HETFLOW_KERNEL_PATH comes first on the search path") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "hetflow-kernel-path-test";
  fs::create_directories(dir);
  std::ofstream(dir / "only_here.cl") << "__kernel void only_here(__global int* x) { x[0] = 7; }\n";
  ::setenv("HETFLOW_KERNEL_PATH", dir.c_str(), 1);
  Fixture f;
  auto program = f.cache.from_file("only_here.cl");
  CHECK(program->label() == (dir / "only_here.cl").string());
  ::unsetenv("HETFLOW_KERNEL_PATH");
  fs::remove_all(dir);
}

TEST_CASE("a file of the same name in the working directory does not replace HETFLOW_KERNEL_PATH's") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "hetflow-kernel-path-first";
  const fs::path cwd = fs::temp_directory_path() / "hetflow-kernel-path-cwd";
  fs::create_directories(dir);
  fs::create_directories(cwd);
  std::ofstream(dir / "same_name.cl") << "__kernel void from_path(__global int* x) { x[0] = 1; }\n";
  std::ofstream(cwd / "same_name.cl") << "__kernel void from_cwd(__global int* x) { x[0] = 2; }\n";
  const fs::path was = fs::current_path();
  fs::current_path(cwd);
  ::setenv("HETFLOW_KERNEL_PATH", dir.c_str(), 1);
  {
    Fixture f;
    CHECK(f.cache.from_file("same_name.cl")->label() == (dir / "same_name.cl").string());
  }
  ::unsetenv("HETFLOW_KERNEL_PATH");
  {
    Fixture f;  // without the variable, the working directory's comes before hetflow's own
    CHECK(f.cache.from_file("same_name.cl")->label() == "same_name.cl");
  }
  fs::current_path(was);
  fs::remove_all(dir);
  fs::remove_all(cwd);
}

TEST_CASE("kernel_search_path() lists the places a missing file's error lists, the working directory included") {
  namespace fs = std::filesystem;
  const std::vector<std::string> dirs = hetflow::kernel_search_path();
  REQUIRE(dirs.size() >= 2);
  CHECK(std::find(dirs.begin(), dirs.end(), fs::current_path().string()) != dirs.end());
  try {
    hetflow::find_kernel_file("no_such_file.cl");
    FAIL("no error");
  } catch (const hetflow::FileNotFoundError& e) {
    std::istringstream lines(e.what());
    std::string line;
    std::getline(lines, line);  // "kernel file ... not found; searched:"
    for (const auto& d : dirs) {
      REQUIRE(std::getline(lines, line));
      CHECK(line == "  " + (fs::path(d) / "no_such_file.cl").string());
    }
  }
}

TEST_CASE("an unknown kernel name lists the kernels the program has") {
  Fixture f;
  auto program = f.cache.from_file("hetflow_test.cl");
  try {
    program->kernel("copy_lop");
    FAIL("no error");
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("copy_lop") != std::string::npos);
    CHECK(msg.find("copy_loop") != std::string::npos);
    CHECK(msg.find("mix_inputs") != std::string::npos);
    CHECK(msg.find("hetflow_test.cl") != std::string::npos);
  }
}

// PoCL 3.1 knows a kernel named after an OpenCL built-in by "_cl_<name>" only (docs/drivers.md).
TEST_CASE("a kernel named after an OpenCL built-in is found by the name the source gives it") {
  const std::string src =
      "kernel void mix(global float* x, float k) { x[get_global_id(0)] *= k; }\n"
      "kernel void _cl_own(global float* x) { x[get_global_id(0)] = 0.0f; }\n";
  Fixture f;
  auto program = f.cache.from_source(src, "", "builtins.cl");
  const auto& names = program->kernel_names();
  CHECK(std::find(names.begin(), names.end(), "mix") != names.end());
  CHECK(std::find(names.begin(), names.end(), "_cl_mix") == names.end());
  CHECK(std::find(names.begin(), names.end(), "_cl_own") != names.end());  // spelt so by the source
  auto k = program->kernel("mix");
  CHECK(k.name() == "mix");
  CHECK(k.num_args() == 2);
  CHECK(program->kernel("_cl_own").name() == "_cl_own");
  if (f.choice.device.platform_name == "Portable Computing Language") {  // the driver's own name, the same kernel
    auto by_driver_name = program->kernel("_cl_mix");
    CHECK(by_driver_name.name() == "mix");
    CHECK(by_driver_name.handle()() == k.handle()());
  }
  try {
    program->kernel("mx");
    FAIL("no error");
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("its kernels are: ") != std::string::npos);
    CHECK(msg.find("_cl_mix") == std::string::npos);
  }

  // And through a controller: it runs, and requests carry the source's name.
  ControllerOptions o;
  o.record = true;
  Controller c(o);
  auto mix = c.kernel_from_source(src, "mix");
  auto x = c.tile<float>(64, "x");
  std::fill(x.data(), x.data() + 64, 2.0f);
  c.move_to(x);
  c.launch(mix, Range(64), io(x), 3.0f);
  c.move_from(x);
  c.wait(x);
  CHECK(x[0] == 6.0f);
  CHECK(x[63] == 6.0f);
  bool named = false;
  for (const auto& r : c.records()) named = named || r.name == "mix";
  CHECK(named);
}

// The driver compiles a copy of the text (PoCL's under its cache), so a quoted include was looked up
// beside that copy; a C compiler looks beside the including file first.
TEST_CASE("#include \"helper.h\" in a .cl file finds helper.h beside it, by HETFLOW_KERNEL_PATH or an absolute path") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "hetflow-include-test";
  fs::create_directories(dir);
  std::ofstream(dir / "helper.h") << "#define HELPER_VALUE 42\n";
  std::ofstream(dir / "uses_helper.cl")
      << "#include \"helper.h\"\n__kernel void uses_helper(__global int* x) { x[0] = HELPER_VALUE; }\n";
  {
    ::setenv("HETFLOW_KERNEL_PATH", dir.c_str(), 1);
    Fixture f;
    auto program = f.cache.from_file("uses_helper.cl");
    CHECK(program->kernel("uses_helper").name() == "uses_helper");
    ::unsetenv("HETFLOW_KERNEL_PATH");
    // Options given are kept, after it; Program::options() (what a rebuild elsewhere uses) shows it.
    auto with_options = f.cache.from_file((dir / "uses_helper.cl").string(), "-DOTHER=1");
    CHECK(with_options->options().find(dir.string()) != std::string::npos);
    CHECK(with_options->options().find("-DOTHER=1") != std::string::npos);
    // It runs, with the value from the header, and builds again from the kernel's source and options.
    Controller c;
    auto k = c.kernel((dir / "uses_helper.cl").string(), "uses_helper");
    auto x = c.tile<int>(1, "x");
    c.launch(k, Range(1), out(x));
    c.move_from(x);
    c.wait(x);
    CHECK(x[0] == 42);
    CHECK_NOTHROW(f.cache.from_source(*k.source(), k.build_options(), k.program_label())->kernel("uses_helper"));
  }
  // A directory with a space in its name is passed quoted: the build works on every driver, and the
  // include too, except on PoCL before 4, which does not unquote build options (docs/drivers.md).
  const fs::path spaced = fs::temp_directory_path() / "hetflow include test";
  fs::create_directories(spaced);
  std::ofstream(spaced / "helper.h") << "#define HELPER_VALUE 43\n";
  std::ofstream(spaced / "plain.cl") << "__kernel void plain(__global int* x) { x[0] = 1; }\n";
  std::ofstream(spaced / "uses_helper.cl")
      << "#include \"helper.h\"\n__kernel void uses_helper(__global int* x) { x[0] = HELPER_VALUE; }\n";
  {
    Fixture f;
    CHECK_NOTHROW(f.cache.from_file((spaced / "plain.cl").string())->kernel("plain"));
    // Its platform version reads "OpenCL 3.0 PoCL 3.1+debian ...".
    const std::string& v = f.choice.device.platform_version;
    const auto at = v.find("PoCL ");
    const bool keeps_quotes = at != std::string::npos && at + 5 < v.size() && v[at + 5] >= '0' && v[at + 5] <= '3' &&
                              (at + 6 >= v.size() || v[at + 6] == '.');
    if (!keeps_quotes) CHECK_NOTHROW(f.cache.from_file((spaced / "uses_helper.cl").string())->kernel("uses_helper"));
    // Where the include is not found, the error says why the compiler's log cannot (a user's trial).
    std::ofstream(spaced / "needs_missing.cl")
        << "#include \"missing_helper.h\"\n__kernel void k(__global int* x) { x[0] = 1; }\n";
    try {
      f.cache.from_file((spaced / "needs_missing.cl").string());
      FAIL("a missing include built");
    } catch (const BuildError& e) {
      CHECK(std::string(e.what()).find("missing_helper.h") != std::string::npos);
      CHECK(std::string(e.what()).find("the kernel file's directory '" + spaced.string() + "' has whitespace") !=
            std::string::npos);
    }
  }
  fs::remove_all(dir);
  fs::remove_all(spaced);
}
