// `nodebench doctor --from FILE`: doctor's rules over a node captured elsewhere, with no GPU.
//
// FILE is one of what nodebench writes on a node:
//   - an `env --json` capture (the result schema's `environment` object): the environment alone;
//     the live facts (ECC counters, peer access, links under load, processes) are not recorded;
//   - a result file (`run`, `validate`): its `environment`, and the binary's CUDA architectures
//     from `nodebench.cuda_architectures`;
//   - a `doctor --json` report (or a fixture of the same shape): environment, architectures and
//     live facts; its own checks are ignored and judged again by this binary's rules.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "check/options.hpp"
#include "check/doctor.hpp"

namespace nb {

enum class CaptureKind { environment, result, doctor };
std::string to_string(CaptureKind k);  // "env --json capture", "result file", "doctor report"

struct CapturedNode {
  DoctorInput input;
  CaptureKind kind = CaptureKind::environment;
  std::string origin;  // the file
};

// Reads a parsed document. Throws nb::Error, naming `origin` and the field, when it is none of the
// three shapes or a field the rules read has the wrong type.
CapturedNode captured_node_from_json(const nlohmann::json& j, const std::string& origin);
// Reads and parses FILE; throws nb::Error naming it when it cannot be read or is not JSON.
CapturedNode load_captured_node(const std::string& path);

// The rules over a captured node. `archs`, when not empty, replaces the recorded CUDA
// architectures of the binary (an env capture records none).
std::vector<Check> judge_captured_node(CapturedNode& node, const std::string& archs = "");


}  // namespace nb
