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
    tensors.push_back(t.defined() ? t.detach() : t);
    needsGrad.push_back(t.requires_grad());
  }
}

std::vector<at::Tensor> SavedInputs::leaves() const {
  std::vector<at::Tensor> in;
  for (size_t i = 0; i < tensors.size(); ++i)
    in.push_back(tensors[i].defined()
                     ? tensors[i].detach().requires_grad_(needsGrad[i])
                     : tensors[i]);
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

namespace {
/// The row inputs' rows [start, start + len), as leaves of the tile's graph.
/// (`residual`'s gets none: its gradient is the output's.)
std::vector<at::Tensor> tileRows(const SavedInputs &rows, int64_t start,
                                 int64_t len, int64_t residual) {
  std::vector<at::Tensor> in;
  for (size_t i = 0; i < rows.size(); ++i) {
    const at::Tensor &t = rows.tensors[i];
    const bool grad = rows.needsGrad[i] && int64_t(i) != residual;
    in.push_back(t.defined()
                     ? t.narrow(0, start, len).detach().requires_grad_(grad)
                     : t);
  }
  return in;
}

/// tiledRecompute's backward: each tile recomputed and differentiated.
std::vector<at::Tensor> tiledBackward(const TileFn &fn, const SavedInputs &rows,
                                      const SavedInputs &shared, int64_t tile,
                                      int64_t residual, const at::Tensor &dy) {
  const size_t nr = rows.size();
  std::vector<at::Tensor> r(nr + shared.size());
  if (!dy.defined())
    return r;
  for (size_t i = 0; i < nr; ++i)
    if (rows.tensors[i].defined() && rows.needsGrad[i])
      r[i] = int64_t(i) == residual ? dy : at::empty_like(rows.tensors[i]);
  std::vector<at::Tensor> sharedLeaves = shared.leaves();
  const int64_t R = dy.size(0);
  for (int64_t t = 0, start = 0; start < R; ++t, start += tile) {
    const int64_t len = std::min(tile, R - start);
    std::vector<at::Tensor> in = tileRows(rows, start, len, residual);
    at::Tensor out;
    {
      at::AutoGradMode enable(true);
      out = fn(in, sharedLeaves, t, /*value=*/false);
    }
    in.insert(in.end(), sharedLeaves.begin(), sharedLeaves.end());
    std::vector<at::Tensor> g =
        differentiate({out}, {dy.narrow(0, start, len)}, in);
    for (size_t i = 0; i < nr; ++i)
      if (r[i].defined() && int64_t(i) != residual)
        g[i].defined() ? r[i].narrow(0, start, len).copy_(g[i])
                       : r[i].narrow(0, start, len).zero_();
    for (size_t j = nr; j < g.size(); ++j) // summed in fp32 at least
      if (g[j].defined())
        r[j] = r[j].defined()
                   ? r[j].add_(g[j])
                   : g[j].to(at::promote_types(at::kFloat, g[j].scalar_type()));
  }
  for (size_t j = nr; j < r.size(); ++j)
    if (r[j].defined())
      r[j] = r[j].to(shared.tensors[j - nr].scalar_type());
  return r;
}
} // namespace

at::Tensor tiledRecompute(const TileFn &fn,
                          const std::vector<at::Tensor> &rowInputs,
                          const std::vector<at::Tensor> &shared, int64_t tile,
                          int64_t outCols, bool value, int64_t residual) {
  SWIFT_ASSERT(tile > 0 && !rowInputs.empty() && rowInputs[0].defined(),
               "tiledRecompute: a tile size and a first row input");
  const at::Tensor &first = rowInputs[0];
  const int64_t R = first.size(0);
  std::vector<at::Tensor> outs{at::empty({R, outCols}, first.options())};
  if (value) {
    at::NoGradGuard noGrad;
    for (int64_t t = 0, start = 0; start < R; ++t, start += tile) {
      const int64_t len = std::min(tile, R - start);
      std::vector<at::Tensor> in;
      for (const at::Tensor &x : rowInputs)
        in.push_back(x.defined() ? x.narrow(0, start, len) : x);
      outs[0].narrow(0, start, len).copy_(fn(in, shared, t, true));
    }
  }
  std::vector<at::Tensor> in = rowInputs;
  in.insert(in.end(), shared.begin(), shared.end());
  if (!needsBackward(in))
    return outs[0];
  attachBackward(
      in, outs,
      [fn, rows = SavedInputs(rowInputs), saved = SavedInputs(shared),
       tile, residual](std::vector<at::Tensor> &&grads) mutable {
        std::vector<at::Tensor> r =
            tiledBackward(fn, rows, saved, tile, residual, grads[0]);
        rows = saved = SavedInputs();
        return r;
      },
      "TiledRecomputeBackward");
  return outs[0];
}

} // namespace swift::rt
