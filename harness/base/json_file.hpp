// Reading the JSON files a command is given (result files, captures, reports): every problem is
// an nb::Error that names the file, so the command can say it and exit 2.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace nb {

// The schema version of the documents nodebench writes and reads (nodebench.result,
// nodebench.doctor, nodebench.advise); run/result.hpp's kSchemaVersion is the same (a test says so).
constexpr int kReadableSchemaVersion = 1;

// The file parsed as JSON. Throws naming `path`: missing, a folder, unreadable, empty, not JSON.
nlohmann::json read_json_file(const std::string& path);

// A nodebench document (one with "schema": "nodebench.*" or a "schema_version") must be of the
// version this build reads; docs/SCHEMA.md: "a reader refuses a file whose version it does not
// know". Throws naming `path`, the schema and the version found. Other JSON (an `env --json`
// capture) passes.
void check_schema_version(const nlohmann::json& doc, const std::string& path);

}  // namespace nb
