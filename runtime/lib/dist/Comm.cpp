//===- Comm.cpp - one-rank and Gloo (c10d) backends -----------------------===//
#include "swift/Runtime/dist/Comm.h"
#include "swift/Runtime/core/Check.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

// LibTorch declares ProcessGroupGloo only under USE_C10D_GLOO (set by its
// CMake targets) and needs Gloo's own headers, which not every LibTorch
// distribution ships; without them this build has no Gloo backend.
#if defined(USE_C10D_GLOO) && __has_include(<gloo/algorithm.h>)
#define SWIFT_HAVE_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

namespace swift::rt {

at::Tensor rawAlias(const at::Tensor &t) {
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options());
}

namespace {

/// World size 1: every collective is a local copy (or nothing).
class LocalComm final : public Comm {
public:
  Pending allReduceSum(at::Tensor) override { return {}; }
  Pending reduceScatterAdd(at::Tensor full, at::Tensor accum) override {
    accum.add_(full);
    return {};
  }
  Pending allGather(at::Tensor shard, at::Tensor full) override {
    if (shard.data_ptr() != full.data_ptr())
      rawAlias(full).copy_(shard);
    return {};
  }
  void allReduceHost(std::vector<double> &) override {}
  void barrier() override {}
};

#ifdef SWIFT_HAVE_GLOO
/// CPU ranks through LibTorch's c10d ProcessGroupGloo. Gloo's CPU
/// collectives support no bf16 reduction in every LibTorch version, so bf16
/// is reduced in fp32 and gathered as raw 16-bit words.
class GlooComm final : public Comm {
public:
  explicit GlooComm(const CommOptions &opt) {
    rank_ = opt.rank;
    world_ = opt.world;
    auto options = c10d::ProcessGroupGloo::Options::create(
        std::chrono::milliseconds(int64_t(opt.timeoutSeconds * 1000)));
    const char *addr = std::getenv("MASTER_ADDR");
    std::string host = addr ? addr : "127.0.0.1";
    if (host == "127.0.0.1" || host == "localhost")
      options->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(opt.store, rank_, world_,
                                                      options);
  }

  Pending allReduceSum(at::Tensor t) override {
    bool narrow =
        t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble;
    at::Tensor buf = narrow ? t.to(at::kFloat) : t;
    std::vector<at::Tensor> ts{buf};
    auto work = pg_->allreduce(ts);
    return Pending([work, t, buf, narrow]() mutable {
      wait(work);
      if (narrow)
        t.copy_(buf);
    });
  }

  Pending reduceScatterAdd(at::Tensor full, at::Tensor accum) override {
    // Gloo has no reduce-scatter in every LibTorch version: all-reduce the
    // whole buffer, keep this rank's slice. Correct, 2x the traffic; CPU
    // runs are for testing.
    at::Tensor buf =
        full.scalar_type() == at::kFloat ? full : full.to(at::kFloat);
    std::vector<at::Tensor> ts{buf};
    auto work = pg_->allreduce(ts);
    const int64_t n = accum.numel();
    const int r = rank_;
    return Pending([work, buf, accum, n, r]() mutable {
      wait(work);
      accum.add_(buf.narrow(0, r * n, n));
    });
  }

  Pending allGather(at::Tensor shard, at::Tensor full) override {
    auto words = [](const at::Tensor &t) {
      // Gloo gathers 16-bit floats as fp16; the bits pass through untouched.
      return t.element_size() == 2 ? t.view(at::kHalf) : t;
    };
    const int64_t n = shard.numel();
    at::Tensor out = rawAlias(full);
    // Gloo copies the input first, so an in-place gather (shard inside
    // full) is safe.
    std::vector<at::Tensor> in{words(shard).clone()};
    std::vector<std::vector<at::Tensor>> outs(1);
    for (int r = 0; r < world_; ++r)
      outs[0].push_back(words(out).narrow(0, r * n, n));
    auto work = pg_->allgather(outs, in);
    return Pending([work, shard, full, in, outs]() mutable { wait(work); });
  }

  void allReduceHost(std::vector<double> &values) override {
    at::Tensor t = at::tensor(values, at::TensorOptions().dtype(at::kDouble));
    std::vector<at::Tensor> ts{t};
    wait(pg_->allreduce(ts));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = t[int64_t(i)].item<double>();
  }

  void barrier() override { wait(pg_->barrier()); }

private:
  static void wait(const c10::intrusive_ptr<c10d::Work> &work) {
    try {
      work->wait();
    } catch (const std::exception &e) {
      throw PeerFailure(std::string("Gloo collective failed (when a peer "
                                    "rank died, this is the symptom): ") +
                        e.what());
    }
  }
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};
#endif // SWIFT_HAVE_GLOO

} // namespace

std::unique_ptr<Comm> makeComm(const CommOptions &opt) {
  if (opt.backend == "local") {
    SWIFT_ASSERT(opt.world == 1, "no communication backend for ", opt.world,
                 " ranks");
    return std::make_unique<LocalComm>();
  }
#ifdef SWIFT_HAVE_GLOO
  if (opt.backend == "gloo")
    return std::make_unique<GlooComm>(opt);
#endif
#ifdef SWIFT_WITH_CUDA
  if (opt.backend == "nccl")
    return makeNcclComm(opt);
#endif
  SWIFT_CHECK(false, "communication backend \"", opt.backend,
              "\" is not available in this build");
}

MeshComms::MeshComms(Comm &world, const CommOptions &opt, int shardRanks)
    : world_(world), shard_(&world) {
  const int W = world.worldSize(), S = shardRanks, r = world.rank();
  SWIFT_ASSERT(S >= 1 && W % S == 0, "shard groups of ", S, " ranks in ", W);
  if (S == W)
    return;
  // One communicator per group this rank is in, on the group's own keys
  // (NCCL's unique id, Gloo's rendezvous). Every rank creates its shard
  // communicator, then its replica one: the groups' inits never wait on
  // each other.
  auto group = [&](const std::string &name, int rank, int size) {
    CommOptions o = opt;
    o.rank = rank;
    o.world = size;
    if (size == 1) {
      o.backend = "local";
      o.store.reset();
    } else {
      o.store = c10::make_intrusive<c10d::PrefixStore>(name, opt.store);
    }
    return makeComm(o);
  };
  ownShard_ = group("shard/" + std::to_string(r / S), r % S, S);
  shard_ = ownShard_.get();
  replica_ = group("replica/" + std::to_string(r % S), r / S, W / S);
}

} // namespace swift::rt
