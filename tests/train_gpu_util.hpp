// Helpers of the GPU tests (label gpu) of the ResNet-50 training step and the data-parallel engine.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/resources.hpp"
#include "shared/resnet50/train_step.hpp"
#include "gpu_test_util.hpp"

namespace nb::test {

// A step's configuration in one precision at one batch (the rest as StepConfig has it).
inline train::StepConfig step_config(const char* prec, int64_t batch) {
  train::StepConfig cfg;
  cfg.prec = &cudnn::prec_by_name(prec);
  cfg.batch = batch;
  return cfg;
}

// The same in one layout and fusion setting, starting from the precision's default loss scale.
inline train::StepConfig step_config(const char* prec, int64_t batch, bool nhwc, train::Fusion fusion) {
  train::StepConfig cfg = step_config(prec, batch);
  cfg.nhwc = nhwc;
  cfg.loss_scale = train::default_loss_scale(*cfg.prec);
  cfg.fusion = fusion;
  return cfg;
}

// One training step on device 0 with what a Session lends it and its stream, set up, then taken
// forward and backward once (its gradients computed). Members are destroyed step first.
struct BackwardOnce {
  Lent lent;
  Stream s;
  train::TrainStep st;
  BackwardOnce(const cudaDeviceProp& prop, const train::StepConfig& cfg)
      : st(cfg, lent.libs(0), 0, prop.name, s.get()) {
    st.setup();
    st.forward(s.get());
    st.backward(s.get());
  }
};

// The largest absolute difference of a from b, and the largest magnitude in b.
struct Diff {
  double worst = 0, scale = 0;
};
inline Diff max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  Diff d;
  for (size_t i = 0; i < a.size(); ++i) {
    d.worst = std::max(d.worst, double(std::fabs(a[i] - b[i])));
    d.scale = std::max(d.scale, double(std::fabs(b[i])));
  }
  return d;
}

}  // namespace nb::test
