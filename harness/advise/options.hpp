// The options of `nodebench advise` (docs/ADVISE.md).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace nb {

struct AdviseOptions {
  std::vector<std::string> files;          // result files
  std::string gpus;                        // GPU counts per node, "1,2,4"; empty: the measured counts
  int nodes = 1;
  std::optional<double> inter_node_gbps;   // GB/s per node (bytes: 100 Gb/s Ethernet is 12.5)
  std::optional<double> step_ms;           // a framework's own one-GPU step time
  std::optional<double> params;            // its parameter count (default: ResNet-50's)
  std::optional<int> batch;                // the per-GPU batch of --step-ms (and of the what-if)
  std::string profile;                     // what-if: a device profile name
  std::string link;                        // what-if: pcie-gen3, pcie-gen4, nvlink
  std::optional<int> global_batch;         // accumulation steps to reach it
  double bucket_mib = 25;                  // gradient bucket (PyTorch DDP's default)
  std::string grad_dtype = "fp32";         // gradient bytes per parameter: fp32 4, fp16 2
  std::string image_dtype = "uint8";       // input bytes per image: uint8 150528, fp32 602112
  std::string json_file;                   // also write the advice as JSON here
};

}  // namespace nb
