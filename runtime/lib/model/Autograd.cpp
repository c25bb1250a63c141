//===- Autograd.cpp - custom nodes for the unit engine and recompute ------===//
#include "swift/Runtime/model/Autograd.h"
#include "swift/Runtime/core/Check.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>

namespace swift::rt {
namespace {

struct LambdaNode : torch::autograd::Node {
  LambdaNode(BackwardFn fn, const char *name)
      : fn_(std::move(fn)), name_(name) {}
  torch::autograd::variable_list
  apply(torch::autograd::variable_list &&grads) override {
    SWIFT_ASSERT(fn_, "backward of ", name_, " ran twice");
    BackwardFn fn = std::move(fn_);
    fn_ = nullptr; // drop captured activations as soon as we are done
    return fn(std::move(grads));
  }
  void release_variables() override { fn_ = nullptr; }
  std::string name() const override { return name_; }

private:
  BackwardFn fn_;
  const char *name_;
};

} // namespace

void attachBackward(const std::vector<at::Tensor> &inputs,
                    std::vector<at::Tensor> &outputs, BackwardFn backward,
                    const char *name) {
  std::shared_ptr<LambdaNode> node(new LambdaNode(std::move(backward), name),
                                   torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  for (at::Tensor &out : outputs) {
    SWIFT_ASSERT(!out.requires_grad(), name, ": output already has history");
    torch::autograd::create_gradient_edge(out, node);
  }
}

std::vector<at::Tensor> differentiate(const std::vector<at::Tensor> &outputs,
                                      const std::vector<at::Tensor> &grads,
                                      const std::vector<at::Tensor> &inputs) {
  std::vector<at::Tensor> outs, gs, wrt;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (grads[i].defined() && outputs[i].requires_grad()) {
      outs.push_back(outputs[i]);
      gs.push_back(grads[i]);
    }
  std::vector<size_t> where;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      wrt.push_back(inputs[i]);
      where.push_back(i);
    }
  std::vector<at::Tensor> result(inputs.size());
  if (outs.empty() || wrt.empty())
    return result;
  // Backward nodes run with grad mode off; the inner graph needs no higher
  // order, so keep it off (create_graph = false).
  auto g = torch::autograd::grad(outs, wrt, gs, /*retain_graph=*/false,
                                 /*create_graph=*/false, /*allow_unused=*/true);
  for (size_t i = 0; i < where.size(); ++i)
    result[where[i]] = g[i];
  return result;
}

bool needsBackward(const std::vector<at::Tensor> &inputs) {
  return at::GradMode::is_enabled() &&
         std::any_of(inputs.begin(), inputs.end(), [](const at::Tensor &t) {
           return t.defined() && t.requires_grad();
         });
}

SavedInputs::SavedInputs(const std::vector<at::Tensor> &inputs) {
  for (const at::Tensor &t : inputs) {
    tensors.push_back(t.detach());
    needsGrad.push_back(t.requires_grad());
  }
}

std::vector<at::Tensor> SavedInputs::leaves() const {
  std::vector<at::Tensor> in;
  for (size_t i = 0; i < tensors.size(); ++i)
    in.push_back(tensors[i].detach().requires_grad_(needsGrad[i]));
  return in;
}

std::vector<at::Tensor> recompute(const TensorFn &fn,
                                  const std::vector<at::Tensor> &inputs) {
  std::vector<at::Tensor> outputs;
  {
    at::NoGradGuard noGrad;
    outputs = fn(inputs);
  }
  attachBackward(
      inputs, outputs,
      [fn, saved = SavedInputs(inputs)](std::vector<at::Tensor> &&grads) {
        std::vector<at::Tensor> in = saved.leaves();
        std::vector<at::Tensor> out;
        {
          at::AutoGradMode enable(true);
          out = fn(in);
        }
        return differentiate(out, grads, in);
      },
      "RecomputeBackward");
  return outputs;
}

} // namespace swift::rt
