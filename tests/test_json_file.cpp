// base/json_file.hpp: how the commands read the JSON files they are given (advise, doctor --from,
// run --runs), and the schema version every reader refuses when it does not know it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "base/json_file.hpp"
#include "run/result.hpp"

using namespace nb;
using nlohmann::json;

namespace {

std::string write(const std::string& name, const std::string& text) {
  const std::string path = std::string(NB_TEST_OUTPUT_DIR) + "/json_file_" + name;
  std::ofstream(path) << text;
  return path;
}

std::string read_error(const std::string& path) {
  try {
    (void)read_json_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string version_error(const json& doc) {
  try {
    check_schema_version(doc, "f.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(JsonFile, EveryProblemNamesTheFile) {
  EXPECT_EQ(read_error("/nonexistent/x.json"), "/nonexistent/x.json: cannot read the file (no such file)");
  EXPECT_EQ(read_error(NB_TEST_OUTPUT_DIR), std::string(NB_TEST_OUTPUT_DIR) + ": is a folder, not a JSON file");
  const std::string empty = write("empty.json", " \n");
  EXPECT_EQ(read_error(empty), empty + ": the file is empty, not JSON");
  const std::string bad = write("bad.json", "{\"records\": [");
  EXPECT_EQ(read_error(bad).rfind(bad + ": not valid JSON (", 0), 0u) << read_error(bad);
  const std::string ok = write("ok.json", "{\"a\": [1, 2]}");
  EXPECT_EQ(read_json_file(ok), json({{"a", {1, 2}}}));
}

TEST(JsonFile, UnknownSchemaVersionsAreRefused) {
  EXPECT_EQ(kReadableSchemaVersion, kSchemaVersion);  // the version written is the version read
  EXPECT_EQ(version_error({{"schema", "nodebench.result"}, {"schema_version", 1}}), "");
  EXPECT_EQ(version_error({{"gpus", json::array()}}), "");  // an env capture has no schema
  EXPECT_EQ(version_error(json::array()), "");
  EXPECT_EQ(version_error({{"schema", "nodebench.result"}, {"schema_version", 99}}),
            "f.json: 'nodebench.result' schema_version 99: this nodebench reads version 1 only (docs/SCHEMA.md); "
            "use the nodebench that wrote it");
  EXPECT_NE(version_error({{"schema_version", 2}}).find("f.json: schema_version 2:"), std::string::npos);
  EXPECT_NE(version_error({{"schema", "nodebench.doctor"}, {"schema_version", "1"}}).find("schema_version \"1\""),
            std::string::npos);
  EXPECT_NE(version_error({{"schema", "nodebench.doctor"}, {"schema_version", 1.5}}).find("1.5"), std::string::npos);
  EXPECT_NE(version_error({{"schema", "nodebench.result"}}).find("without 'schema_version'"), std::string::npos);
}
