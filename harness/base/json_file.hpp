// Reading the JSON files a command is given (result files, captures, reports): every problem is
// an nb::Error that names the file, so the command can say it and exit 2.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace nb {

// The schema version of the documents nodebench writes and reads (nodebench.result,
// nodebench.doctor, nodebench.advise); run/result.hpp's kSchemaVersion is the same (a test says so).
constexpr int kReadableSchemaVersion = 1;

// The most bytes a command reads from one input file (after decompression): far above any result
// file nodebench writes, and a bound on what a device, a FIFO or a gzip bomb could make it hold.
constexpr size_t kMaxInputBytes = size_t(256) << 20;

// The text of a file a command is given, gzip-decompressed when it is gzip-compressed (its first
// bytes say so, whatever its name; a .json.gz result reads as its .json). Only a regular file is
// read (a device such as /dev/zero, a FIFO or a socket is refused at once, never waited on), and
// at most `max_bytes` of it (before and after decompression). Throws naming `path`: missing, a
// folder, not a regular file, unreadable, too large, a damaged gzip stream.
std::string read_input_file(const std::string& path, size_t max_bytes = kMaxInputBytes);

// The file (read_input_file) parsed as JSON. Throws naming `path`: as read_input_file, empty, not JSON.
nlohmann::json read_json_file(const std::string& path);

// A nodebench document (one with "schema": "nodebench.*" or a "schema_version") must be of the
// version this build reads; docs/SCHEMA.md: "a reader refuses a file whose version it does not
// know". Throws naming `path`, the schema and the version found. Other JSON (an `env --json`
// capture) passes.
void check_schema_version(const nlohmann::json& doc, const std::string& path);

}  // namespace nb
