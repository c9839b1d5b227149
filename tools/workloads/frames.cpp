#include "workloads/frames.hpp"

#include "workloads/hash.hpp"

#include <hetflow/errors.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string_view>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace hetflow::workloads {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw hetflow::Error("Y4M file '" + path + "': " + what);
}

std::string errno_text() { return errno ? std::string(": ") + std::strerror(errno) : std::string(); }

// Reads one '\n'-terminated header line (without the '\n'). Returns false when the stream is at its
// end before the first character; throws when it ends inside the line or the line is too long.
bool read_line(std::FILE* f, const std::string& path, const char* what, std::string& line) {
  line.clear();
  constexpr std::size_t max_len = 64 * 1024;
  for (;;) {
    const int c = std::fgetc(f);
    if (c == EOF) {
      if (std::ferror(f)) fail(path, std::string("read error in ") + what + errno_text());
      if (line.empty()) return false;
      fail(path, std::string("truncated ") + what + " (no end of line)");
    }
    if (c == '\n') return true;
    line.push_back(static_cast<char>(c));
    if (line.size() > max_len) fail(path, std::string(what) + " longer than 64 KiB (not a Y4M stream?)");
  }
}

bool parse_positive_int(const std::string& s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + (ch - '0');
  }
  if (v <= 0) return false;
  out = v;
  return true;
}

// "n:d" with both parts decimal; zero parts allowed only where the format says "unknown" (aspect 0:0).
bool is_ratio(const std::string& s, bool zero_allowed) {
  const auto colon = s.find(':');
  if (colon == std::string::npos) return false;
  int n = 0, d = 0;
  const std::string a = s.substr(0, colon), b = s.substr(colon + 1);
  if (zero_allowed && a == "0" && b == "0") return true;
  return parse_positive_int(a, n) && parse_positive_int(b, d);
}

// ---- synthetic frames ----------------------------------------------------------------------------

#if defined(__x86_64__) && defined(__GNUC__)
#define HETFLOW_STREAMING_STORES
#endif

// The per-pixel loop, compiled for AVX2 and SSE4.1 too where the compiler can pick the best at load
// time (the 32-bit multiply of the hash has no SSE2 vector instruction: 113 ms for a 16K frame with
// SSE2 alone, 25 ms with AVX2, on one EPYC core).
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define HETFLOW_PIXEL_CLONES __attribute__((target_clones("avx2", "sse4.1", "default")))
#else
#define HETFLOW_PIXEL_CLONES
#endif

inline float pixel(std::uint32_t x, std::uint32_t row_seed, std::uint32_t shift_x, std::uint32_t py) {
  // Noise: a per-pixel integer hash (one multiply), top 6 bits -> 0..63.
  std::uint32_t h = (x * 0x9E3779B1U) ^ row_seed;
  h ^= h >> 15;
  h *= 0x2C1B3C6DU;
  h ^= h >> 12;
  const std::uint32_t pattern = ((x + shift_x) ^ py) & 0xFFU;  // 0..255
  return static_cast<float>(static_cast<std::int32_t>(pattern)) * 0.75f +
         static_cast<float>(static_cast<std::int32_t>(h >> 26));  // <= 191.25 + 63
}

// With `streaming`, pixels are computed into a small block and written with non-temporal stores: a
// large frame outlives any cache before its next reader (a copy engine), and ordinary stores would
// first read every line they write. On an H100 host (16 threads) the 16K Sobel pipeline ran 20 %
// faster with them, native and hetflow alike (perf/RESULTS.md, 2026-11-27 13:31Z).
HETFLOW_PIXEL_CLONES
void generate_row(float* row, std::uint32_t width, std::uint32_t row_seed, std::uint32_t shift_x, std::uint32_t py,
                  bool streaming) {
  std::uint32_t x = 0;
#ifdef HETFLOW_STREAMING_STORES
  if (streaming) {
    constexpr std::uint32_t block = 64;
    alignas(16) float staged[block];
    for (; x < width && reinterpret_cast<std::uintptr_t>(row + x) % 16 != 0; ++x)
      row[x] = pixel(x, row_seed, shift_x, py);
    for (; x + block <= width; x += block) {
      for (std::uint32_t j = 0; j < block; ++j) staged[j] = pixel(x + j, row_seed, shift_x, py);
      for (std::uint32_t j = 0; j < block; j += 4) _mm_stream_ps(row + x + j, _mm_load_ps(staged + j));
    }
  }
#endif
  for (; x < width; ++x) row[x] = pixel(x, row_seed, shift_x, py);
}

}  // namespace

void generate_frame(float* dst, int width, int height, int index) {
  if (width <= 0 || height <= 0) return;
  const std::uint32_t f = static_cast<std::uint32_t>(index);
  const std::uint32_t frame_seed = mix32(f * 0x27d4eb2fU + 0x165667b1U);
  const std::uint32_t shift_x = 3U * f;  // the texture moves 3 px right and 2 px down per frame
  // Frames that may stay in a last-level cache keep ordinary stores: their next reader (a CPU
  // device's copy, the host's sum) then finds them there.
  const bool streaming = std::size_t(width) * std::size_t(height) * sizeof(float) >= (std::size_t{16} << 20);
  // Rows in parallel (each pixel depends only on its coordinates and the index, so the frame is
  // the same whatever the threads): one core's memory bandwidth limits a 16K frame (531 MB).
  tbb::parallel_for(tbb::blocked_range<int>(0, height, 8), [&](const tbb::blocked_range<int>& rows) {
    for (int y = rows.begin(); y != rows.end(); ++y) {
      const std::uint32_t row_seed = mix32(static_cast<std::uint32_t>(y) ^ frame_seed);
      const std::uint32_t py = static_cast<std::uint32_t>(y) + 2U * f;
      generate_row(dst + static_cast<std::size_t>(y) * static_cast<std::size_t>(width),
                   static_cast<std::uint32_t>(width), row_seed, shift_x, py, streaming);
    }
#ifdef HETFLOW_STREAMING_STORES
    if (streaming) _mm_sfence();  // streaming stores are weakly ordered: visible before the task is seen done
#endif
  });
}

// ---- Y4M reading ---------------------------------------------------------------------------------

Y4mReader::Y4mReader(const std::string& path) : path_(path) {
  errno = 0;
  file_.reset(std::fopen(path.c_str(), "rb"));
  if (!file_) fail(path_, "cannot open for reading" + errno_text());

  std::string header;
  if (!read_line(file_.get(), path_, "stream header", header)) fail(path_, "empty file (no YUV4MPEG2 header)");
  std::istringstream tokens(header);
  std::string magic;
  tokens >> magic;
  if (magic != "YUV4MPEG2") fail(path_, "bad magic: expected 'YUV4MPEG2', found '" + magic.substr(0, 32) + "'");

  std::string cs = "420jpeg";                                       // the format's default
  std::string rate = "F25:1", interlacing = "Ip", aspect = "A1:1";  // Y4mWriter's defaults
  for (std::string tok; tokens >> tok;) {
    const char tag = tok[0];
    const std::string value = tok.substr(1);
    if (tag == 'W') {
      if (!parse_positive_int(value, width_)) fail(path_, "bad width '" + tok + "' in header");
    } else if (tag == 'H') {
      if (!parse_positive_int(value, height_)) fail(path_, "bad height '" + tok + "' in header");
    } else if (tag == 'C') {
      cs = value;
    } else if (tag == 'F' && is_ratio(value, false)) {
      rate = tok;
    } else if (tag == 'I' && value.size() == 1 && std::string_view("ptbm").find(value[0]) != std::string_view::npos) {
      interlacing = tok;
    } else if (tag == 'A' && is_ratio(value, true)) {
      aspect = tok;
    }  // X (extensions): not needed for the luma
  }
  timing_tags_ = rate + " " + interlacing + " " + aspect;
  if (width_ == 0) fail(path_, "header has no width (W tag)");
  if (height_ == 0) fail(path_, "header has no height (H tag)");

  const std::size_t w = static_cast<std::size_t>(width_), h = static_cast<std::size_t>(height_);
  if (w * h > std::size_t{INT32_MAX})  // the kernels index a frame's pixels with int
    fail(path_, "frames of " + std::to_string(w) + "x" + std::to_string(h) + " = " + std::to_string(w * h) +
                    " pixels are larger than hetflow reads (at most 2^31 - 1 pixels)");
  const std::size_t cw = (w + 1) / 2, ch = (h + 1) / 2;
  if (cs == "420jpeg" || cs == "420" || cs == "420mpeg2" || cs == "420paldv")
    chroma_bytes_ = 2 * cw * ch;
  else if (cs == "422")
    chroma_bytes_ = 2 * cw * h;
  else if (cs == "444")
    chroma_bytes_ = 2 * w * h;
  else if (cs == "mono")
    chroma_bytes_ = 0;
  else
    fail(path_, "unsupported colour space 'C" + cs +
                    "' (supported: 8-bit C420jpeg, C420, C420mpeg2, C420paldv, C422, C444, Cmono)");
  colour_space_ = cs;
  buffer_.resize(std::max(w * h, chroma_bytes_));
}

bool Y4mReader::read_luma(float* dst) {
  std::FILE* f = file_.get();
  if (!f) fail(path_, "reader used after being moved from");
  std::string line;
  if (!read_line(f, path_, "FRAME header", line)) return false;
  if (line.compare(0, 5, "FRAME") != 0 || (line.size() > 5 && line[5] != ' '))
    fail(path_, "bad frame header at frame " + std::to_string(frames_read_) + ": expected 'FRAME', found '" +
                    line.substr(0, 32) + "'");

  const std::size_t luma = static_cast<std::size_t>(width_) * static_cast<std::size_t>(height_);
  std::size_t got = std::fread(buffer_.data(), 1, luma, f);
  if (got != luma)
    fail(path_, "truncated frame " + std::to_string(frames_read_) + ": expected " + std::to_string(luma) +
                    " bytes of luma, got " + std::to_string(got));
  for (std::size_t i = 0; i < luma; ++i) dst[i] = static_cast<float>(buffer_[i]);
  if (chroma_bytes_) {
    // Read (rather than seek over) the chroma, so a truncated last frame is detected.
    got = std::fread(buffer_.data(), 1, chroma_bytes_, f);
    if (got != chroma_bytes_)
      fail(path_, "truncated frame " + std::to_string(frames_read_) + ": expected " + std::to_string(chroma_bytes_) +
                      " bytes of chroma, got " + std::to_string(got));
  }
  ++frames_read_;
  return true;
}

// ---- Y4M writing ---------------------------------------------------------------------------------

Y4mWriter::Y4mWriter(const std::string& path, int width, int height, const std::string& timing_tags)
    : path_(path), width_(width), height_(height) {
  if (width <= 0 || height <= 0)
    fail(path_, "cannot write a " + std::to_string(width) + "x" + std::to_string(height) + " stream");
  errno = 0;
  file_.reset(std::fopen(path.c_str(), "wb"));
  if (!file_) fail(path_, "cannot open for writing" + errno_text());
  const std::string header =
      "YUV4MPEG2 W" + std::to_string(width) + " H" + std::to_string(height) + " " + timing_tags + " C420jpeg\n";
  if (std::fwrite(header.data(), 1, header.size(), file_.get()) != header.size())
    fail(path_, "write error in stream header" + errno_text());
  const std::size_t w = static_cast<std::size_t>(width), h = static_cast<std::size_t>(height);
  buffer_.resize(w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2));
}

void Y4mWriter::write_luma(const float* src) {
  std::FILE* f = file_.get();
  if (!f) fail(path_, "writer used after close() or after being moved from");
  const std::size_t luma = static_cast<std::size_t>(width_) * static_cast<std::size_t>(height_);
  for (std::size_t i = 0; i < luma; ++i) {
    const float v = src[i];
    std::uint8_t b;
    if (!(v > 0.0f))  // negative, zero or NaN
      b = 0;
    else if (v >= 255.0f)
      b = 255;
    else
      b = static_cast<std::uint8_t>(v + 0.5f);
    buffer_[i] = b;
  }
  std::memset(buffer_.data() + luma, 128, buffer_.size() - luma);
  static const char frame_header[] = "FRAME\n";
  errno = 0;
  if (std::fwrite(frame_header, 1, sizeof frame_header - 1, f) != sizeof frame_header - 1 ||
      std::fwrite(buffer_.data(), 1, buffer_.size(), f) != buffer_.size())
    fail(path_, "write error at frame " + std::to_string(frames_written_) + errno_text());
  ++frames_written_;
}

void Y4mWriter::close() {
  std::FILE* f = file_.release();
  if (!f) return;
  errno = 0;
  const bool bad = std::fflush(f) != 0 || std::ferror(f) != 0;
  const bool close_failed = std::fclose(f) != 0;
  if (bad || close_failed) fail(path_, "write error when closing" + errno_text());
}

}  // namespace hetflow::workloads
