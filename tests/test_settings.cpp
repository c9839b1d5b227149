// Every environment variable is parsed in one place (src/settings.cpp) and a malformed one is a
// UsageError naming it and what it accepts — from the library and from the CLI alike.
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "process.hpp"
#include "support.hpp"

using namespace hetflow;
using test::Env;

TEST_CASE("a malformed variable is a UsageError naming it and what it accepts") {
  const std::pair<const char*, const char*> cases[] = {{"HETFLOW_POLICY", "fast"},
                                                       {"HETFLOW_KERNEL_QUEUES", "0"},
                                                       {"HETFLOW_KERNEL_QUEUES", "65"},
                                                       {"HETFLOW_KERNEL_QUEUES", "3x"},
                                                       {"HETFLOW_KERNEL_QUEUES", " 3"},
                                                       {"HETFLOW_KERNEL_QUEUES", "+3"},
                                                       {"HETFLOW_QUEUE_ORDER", "sideways"},
                                                       {"HETFLOW_LOG", "verbose"},
                                                       {"HETFLOW_DEBUG_DROP_CALLBACKS", "yes"},
                                                       {"HETFLOW_DEBUG_UNGUARDED_KERNEL_CACHE", "on"},
                                                       {"HETFLOW_DEBUG_STEPS_ON_WORKERS", "true"},
                                                       {"HETFLOW_DEBUG_FAIL_FLUSH", "yes"},
                                                       {"HETFLOW_DEBUG_IDLE_FLUSH", "on"},
                                                       {"HETFLOW_DEBUG_UNCHECKED_LOCAL_SIZE", "yes"},
                                                       {"HETFLOW_DEBUG_POLL_US", "100"},
                                                       {"HETFLOW_DEBUG_POLL_US", "200,100"},
                                                       {"HETFLOW_DEBUG_POLL_US", "0,100"},
                                                       {"HETFLOW_DEBUG_POLL_US", "10,200000"},
                                                       {"HETFLOW_DEBUG_POLL_US", "10,1000x"},
                                                       {"HETFLOW_DEBUG_POLL_US", " 100,1000"},
                                                       {"HETFLOW_DEBUG_POLL_US", "100, 1000"}};
  for (auto [name, value] : cases) {
    CAPTURE(name);
    CAPTURE(value);
    Env env(name, value);
    std::string accepts;
    for (const auto& s : environment_settings())
      if (std::string(s.name) == name) accepts = s.accepts;
    REQUIRE(!accepts.empty());
    const std::string expected = std::string(name) + "='" + value + "' is not valid; it accepts " + accepts;
    CHECK_THROWS_WITH_AS(check_environment(), expected.c_str(), UsageError);
    CHECK_THROWS_WITH_AS(Controller(test::options(Policy::async)), expected.c_str(), UsageError);
  }
}

TEST_CASE("well-formed values are accepted, and options win over the environment") {
  Env policy("HETFLOW_POLICY", "sync"), queues("HETFLOW_KERNEL_QUEUES", "3"), log("HETFLOW_LOG", "off"),
      poll("HETFLOW_DEBUG_POLL_US", "20,500");
  CHECK_NOTHROW(check_environment());
  ControllerOptions o;
  Controller from_env(o);
  CHECK(from_env.policy() == Policy::sync);
  o.policy = Policy::async;
  o.kernel_queues = 2;
  Controller from_options(o);
  CHECK(from_options.policy() == Policy::async);
  CHECK(from_options.kernel_queues() == 2);
  o.kernel_queues = 0;
  CHECK_THROWS_WITH_AS(Controller{o}, "kernel_queues must be between 1 and 64, not 0", UsageError);
  o.policy = Policy::sync;  // one queue under sync, but a bad value is still an error
  o.kernel_queues = 65;
  CHECK_THROWS_WITH_AS(Controller{o}, "kernel_queues must be between 1 and 64, not 65", UsageError);
}

TEST_CASE("ControllerOptions::queue_order needs no environment variable") {
  for (QueueOrder order : {QueueOrder::in_order, QueueOrder::out_of_order}) {
    auto o = test::options(Policy::async, 2);
    o.queue_order = order;
    Controller c(o);
    test::check_still_works(c);
  }
}

TEST_CASE("the README's configuration table lists exactly these variables, in this order") {
  std::ifstream in(std::string(HETFLOW_TEST_SOURCE_DIR) + "/README.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const auto start = readme.find("## Configuration");
  REQUIRE(start != std::string::npos);
  const auto end = readme.find("\n## ", start + 1);
  const std::string section = readme.substr(start, end - start);
  std::vector<std::string> listed;
  const std::regex row(R"(\n\| `(HETFLOW_[A-Z_]+)` \|)");
  for (std::sregex_iterator it(section.begin(), section.end(), row), last; it != last; ++it) listed.push_back((*it)[1]);
  std::vector<std::string> known;
  for (const auto& s : environment_settings()) known.push_back(s.name);
  CHECK(listed == known);
}

TEST_CASE("the CLI rejects malformed variables and flags, naming them") {
  const std::string cli = HETFLOW_CLI_PATH;
  auto r = test::run_command("HETFLOW_LOG=verbose " + cli + " devices");
  CHECK(r.status == 1);
  CHECK(r.output.find("HETFLOW_LOG='verbose' is not valid") != std::string::npos);
  r = test::run_command("HETFLOW_POLICY=fast " + cli + " run sobel --frames 1 --size 64x64");
  CHECK(r.status == 1);
  CHECK(r.output.find("HETFLOW_POLICY='fast' is not valid; it accepts async | sync") != std::string::npos);
  r = test::run_command("HETFLOW_KERNEL_QUEUES=many " + cli + " run sobel --frames 1 --size 64x64");
  CHECK(r.status == 1);
  CHECK(r.output.find("HETFLOW_KERNEL_QUEUES='many'") != std::string::npos);
  // --help and --version answer whatever the environment holds (as the footer promises: status 0).
  for (const char* asks : {" --help", " --version", " run --help", " report -h"}) {
    CAPTURE(asks);
    r = test::run_command("HETFLOW_POLICY=fast " + cli + asks);
    CHECK(r.status == 0);
    CHECK(r.output.find("HETFLOW_POLICY='fast'") == std::string::npos);
  }
  r = test::run_command(cli + " run sobel --frames -1");
  CHECK(r.status != 0);
  CHECK(r.output.find("--frames") != std::string::npos);
  // A well-formed HETFLOW_POLICY is what `hetflow run` runs when --policy is not given.
  r = test::run_command("HETFLOW_POLICY=async " + cli + " run sobel --frames 2 --size 64x64");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("\nasync ") != std::string::npos);
  CHECK(r.output.find("\nsync ") == std::string::npos);
}

TEST_CASE("the CLI's whole-number options name the option as typed, the value and the accepted range") {
  const std::string cli = HETFLOW_CLI_PATH;
  struct Case {
    const char* args;
    const char* said;
  };
  // Refused while parsing, before any device is opened. Each used to pass or to name another option:
  // --calls 0 was "--frames: Value 0 not in range 0.000000 to 1.79...e+308", -5 into an unsigned
  // option wrapped to 2^64 - 5, and "0x10" was read as hex.
  for (const Case& c : {
           Case{"run mandelbrot --calls 0",
                "--calls: '0' is out of range: it must be a whole number from 1 to 2147483647"},
           Case{"run mandelbrot --calls 99999999999999999999",
                "--calls: '99999999999999999999' is out of range: it must be a whole number from 1 to 2147483647"},
           Case{"run jacobi --iters -3", "--iters: '-3' is negative: it must be a whole number from 1 to 2147483647"},
           Case{"run matpow --products 1.5", "--products: '1.5' is not a plain decimal whole number"},
           Case{"run sobel --frames ' 2'", "--frames: ' 2' is not a plain decimal whole number"},
           Case{"run mandelbrot --cpu-workers -1",
                "--cpu-workers: '-1' is negative: it must be a whole number from 1 to 4096"},
           Case{"run mandelbrot --cpu-workers 0x10", "--cpu-workers: '0x10' is not a plain decimal whole number"},
           Case{"run mandelbrot --device-slots 9",
                "--device-slots: '9' is out of range: it must be a whole number from 1 to 8"},
           Case{"run sobel --kernel-queues -1", "--kernel-queues: '-1' is negative"},
           Case{"run sobel --slots -2", "--slots: '-2' is negative"},
           Case{"run sobel --host-threads 1025", "--host-threads: '1025' is out of range"},
           Case{"run sobel --repeat -1", "--repeat: '-1' is negative"},
           Case{"run mandelbrot --size -5",
                "--size '-5': mandelbrot takes an image side (side * side < 2^31), a whole number from 1 to 46340"},
           Case{"run nbody --size 18446744073709551616",
                "--size '18446744073709551616': nbody takes a number of bodies"},
           Case{"run jacobi --size -5",
                "--size '-5' is not 720p, 1080p, 4k, 8k, 16k, WxH or N (W, H and N each a whole"},
           Case{"run sobel --size 64x-3", "--size '64x-3' is not"},
           Case{"run sobel --size ' 64x32'", "--size ' 64x32' is not"},
           Case{"run sobel --frames 2 --calls 3", "--frames excludes --calls"},
           Case{"report t.json --gaps -1",
                "--gaps: '-1' is negative: it must be a whole number from 0 to 18446744073709551615"},
           Case{"dump d.json --from -1",
                "--from: '-1' is negative: it must be a whole number from 0 to 18446744073709551615"},
           Case{"dump d.json --to 18446744073709551616", "--to: '18446744073709551616' is out of range"},
       }) {
    CAPTURE(c.args);
    const auto r = test::run_command(cli + " " + c.args);
    INFO(r.output);
    CHECK(r.status != 0);
    CHECK(r.output.find(c.said) != std::string::npos);
  }
}

TEST_CASE("the CLI reads a whole number with leading zeros as decimal, not octal") {
  const auto r = test::run_command(std::string(HETFLOW_CLI_PATH) +
                                   " run sobel --size 16x16 --frames 010 --repeat 010 --policy async");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("10 frames of 16x16") != std::string::npos);  // CLI11 alone read 010 as 8
  CHECK(r.output.find("median of 10 runs per policy") != std::string::npos);
}
