// base/json_file.hpp: how the commands read the JSON files they are given (advise, doctor --from,
// run --runs), and the schema version every reader refuses when it does not know it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

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

namespace {

// `text` gzip-compressed into `name` (as `gzip` writes it).
std::string write_gz(const std::string& name, const std::string& text) {
  const std::string path = std::string(NB_TEST_OUTPUT_DIR) + "/json_file_" + name;
  gzFile gz = gzopen(path.c_str(), "wb");
  EXPECT_NE(gz, nullptr);
  EXPECT_EQ(gzwrite(gz, text.data(), unsigned(text.size())), int(text.size()));
  EXPECT_EQ(gzclose(gz), Z_OK);
  return path;
}

std::string input_error(const std::string& path, size_t max_bytes) {
  try {
    (void)read_input_file(path, max_bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Issue 38: the project keeps its larger results gzip-compressed; every reader takes them.
TEST(JsonFile, AGzipFileIsReadDecompressedWhateverItsName) {
  const json doc = {{"schema", "nodebench.result"}, {"records", {{{"id", "a/b"}}}}};
  EXPECT_EQ(read_json_file(write_gz("doc.json.gz", doc.dump())), doc);
  EXPECT_EQ(read_json_file(write_gz("doc_no_suffix.json", doc.dump())), doc);  // the bytes say gzip, not the name
  // A damaged stream (cut short) is named, not read as far as it goes.
  const std::string whole = write_gz("whole.json.gz", std::string(100000, ' ') + doc.dump());
  std::ifstream in(whole, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = write("cut.json.gz", bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(read_error(cut).rfind(cut + ": a damaged gzip file (", 0), 0u) << read_error(cut);
}

// No reader reads without a bound: a file over the cap is refused before it is read, and so is a
// gzip file that decompresses past it (a gzip bomb); a device or a FIFO is refused at once.
TEST(JsonFile, AReaderReadsRegularFilesUpToItsCapOnly) {
  const std::string plain = write("big.json", "[" + std::string(5000, ' ') + "]");
  EXPECT_EQ(input_error(plain, 1 << 20), "");
  EXPECT_EQ(input_error(plain, 4096).rfind(plain + ": the file is 5002 bytes, more than the 4096 bytes nodebench reads", 0), 0u)
      << input_error(plain, 4096);
  const std::string bomb = write_gz("bomb.json.gz", "[" + std::string(1 << 20, ' ') + "]");
  EXPECT_LT(std::filesystem::file_size(bomb), 4096u);  // small on disk ...
  EXPECT_EQ(input_error(bomb, 4096), bomb + ": decompresses to more than the 4096 bytes nodebench reads");  // ... not read whole
  EXPECT_EQ(read_input_file(bomb, 2 << 20).size(), size_t(1 << 20) + 2);
  EXPECT_EQ(read_error("/dev/zero"), "/dev/zero: not a regular file (a device, FIFO or socket): nodebench reads files only");
  const std::string fifo = std::string(NB_TEST_OUTPUT_DIR) + "/json_file_fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_error(fifo), fifo + ": not a regular file (a device, FIFO or socket): nodebench reads files only");
  ::unlink(fifo.c_str());
  EXPECT_EQ(kMaxInputBytes, size_t(256) << 20);
}
