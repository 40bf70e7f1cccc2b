// Files and stamps every layer writes: the atomic file replace, UTC timestamps, run ids.
#pragma once
#include <chrono>
#include <string>

namespace nb {

// "2026-12-01T21:26:34.123Z".
std::string iso_utc(std::chrono::system_clock::time_point t);
// 32 random hex digits.
std::string make_run_id();
// Atomically replaces `path` with `text` (temporary file + fsync + rename). Throws nb::Error.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace nb
