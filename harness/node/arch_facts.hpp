// Architecture facts: which builds of cuDNN, NCCL, cuBLAS, PyTorch and TensorRT carry code for
// sm_60/61/70, each with where it was read, and the stack they leave for a GPU below compute
// capability 7.5 ("pins"), from harness/profiles/arch_facts.json (embedded at build time). The
// fixes doctor, validate and the precision verdict print take their versions from here.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace nb {

const nlohmann::json& builtin_arch_facts();
// The pins as substitution variables: "pin.<key>" -> value ("pin.cudnn_version" -> "9.10.2.21").
std::map<std::string, std::string> arch_pin_vars();
// One pin ("" when absent).
std::string arch_pin(const std::string& key);

}  // namespace nb
