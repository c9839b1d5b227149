// Frames for the Sobel workload: a deterministic synthetic generator, and YUV4MPEG2 (.y4m)
// reading and writing of the luma plane as floats in 0..255.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace hetflow::workloads {

// Writes frame `index` of a deterministic synthetic video into dst (width*height floats,
// row-major): a moving XOR texture (sharp edges in both directions, shifted every frame) plus
// hash-based per-pixel noise, values in [0, 255]. Consecutive frames differ. Integer arithmetic
// per pixel (no transcendental functions): a 15360x8640 frame takes about 25 ms on one core (AVX2);
// rows are generated in parallel on the calling thread's TBB arena (the result does not depend on
// the number of threads).
void generate_frame(float* dst, int width, int height, int index);

// Reads the luma (Y) planes of an 8-bit YUV4MPEG2 stream. Colour spaces (the C tag): 420jpeg
// (the default when there is no C tag), 420, 420mpeg2, 420paldv, 422, 444 and mono; the chroma
// planes are skipped. Throws hetflow::Error naming the file and the problem for a missing file,
// a bad magic, a header without W or H, an unsupported colour space, a bad FRAME header or a
// truncated frame.
class Y4mReader {
 public:
  explicit Y4mReader(const std::string& path);
  Y4mReader(Y4mReader&&) noexcept = default;
  Y4mReader& operator=(Y4mReader&&) noexcept = default;

  int width() const { return width_; }
  int height() const { return height_; }
  const std::string& colour_space() const { return colour_space_; }  // "420jpeg", "444", "mono", ...
  int frames_read() const { return frames_read_; }
  // The stream's frame rate, interlacing and aspect tags, for a writer of the same video
  // ("F30000:1001 Ip A1:1"); where a tag is missing or malformed, Y4mWriter's default for it.
  const std::string& timing_tags() const { return timing_tags_; }

  // Reads the next frame's Y plane into dst (width()*height() floats, 0..255). Returns false, with
  // dst untouched, at the end of the stream.
  bool read_luma(float* dst);

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
  int width_ = 0, height_ = 0, frames_read_ = 0;
  std::string colour_space_, timing_tags_;
  std::size_t chroma_bytes_ = 0;  // both chroma planes of one frame
  std::vector<std::uint8_t> buffer_;
};

// Writes an 8-bit YUV4MPEG2 stream, colour space C420jpeg, with the given frame rate, interlacing
// and aspect tags (by default 25 fps, progressive, square pixels; a filtered video keeps its
// source's: Y4mReader::timing_tags): each frame's Y plane from floats (rounded to nearest, clamped
// to 0..255, NaN -> 0) and neutral chroma (128). Throws hetflow::Error naming the file when it
// cannot be created or written.
class Y4mWriter {
 public:
  static constexpr const char* kDefaultTimingTags = "F25:1 Ip A1:1";
  Y4mWriter(const std::string& path, int width, int height, const std::string& timing_tags = kDefaultTimingTags);
  Y4mWriter(Y4mWriter&&) noexcept = default;
  Y4mWriter& operator=(Y4mWriter&&) noexcept = default;
  ~Y4mWriter() = default;

  void write_luma(const float* src);
  // Flushes and closes the file, throwing on a write error (the destructor closes silently).
  void close();
  int frames_written() const { return frames_written_; }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
  int width_ = 0, height_ = 0, frames_written_ = 0;
  std::vector<std::uint8_t> buffer_;
};

}  // namespace hetflow::workloads
