//===- Launch.cpp - the command lines that start the job ------------------===//
//
// swift-run reads the torchrun/srun environment (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; docs/design.md,
// swift-run), so one plan runs under torchrun, under a hand-written
// launcher, or on one node through its own --nproc-per-node. The text
// printed here is meant to be pasted into a shell on each node.
//
//===----------------------------------------------------------------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

#include "llvm/Support/FormatVariadic.h"

namespace swift::emit {
using namespace mlir;
using namespace mlir::swift;

LogicalResult emitLaunch(ModuleOp module, llvm::raw_ostream &os,
                         const LaunchOptions &options) {
  FailureOr<Materialized> m = findMaterialized(module);
  if (failed(m))
    return failure();
  const int64_t nodes = m->cluster.getNodes();
  const int64_t perNode = m->cluster.getGpusPerNode();
  const int64_t world = m->worldSize;
  const Backend backend = m->job.getBackend();
  // The mesh engines are priced, not emitted yet (issue 32, --emit
  // torchtitan / megatron).
  if (backend == Backend::Torchtitan || backend == Backend::Megatron)
    return m->job.emitError("backend ")
           << ::swift::plan::toString(backend)
           << " is priced but has no launch command yet; use --emit "
              "deepspeed, or --set backend=swift-run, hf or deepspeed";
  // Refused before anything is printed: a job the Trainer cannot run.
  FailureOr<std::vector<Flag>> trainer;
  if (backend != Backend::SwiftRun) {
    trainer = trainerFlags(module);
    if (failed(trainer))
      return failure();
  }
  os << llvm::formatv("# {0} node(s) x {1} GPU(s) = {2} rank(s), backend {3}\n",
                      nodes, perNode, world, ::swift::plan::toString(backend));

  // torchrun's rendezvous: standalone on one node, else c10d at MASTER_ADDR
  // (node 0), the same command on every node.
  std::string torchrun =
      nodes == 1
          ? llvm::formatv("torchrun --standalone --nnodes=1 "
                          "--nproc-per-node={0}",
                          perNode)
                .str()
          : llvm::formatv("torchrun --nnodes={0} --nproc-per-node={1} "
                          "--rdzv-backend=c10d "
                          "--rdzv-endpoint=$MASTER_ADDR:{2} --rdzv-id=swift",
                          nodes, perNode, options.masterPort)
                .str();

  if (backend != Backend::SwiftRun) {
    // An HF Trainer script: the flags the ds_config leaves "auto" (and
    // the strategy's batch and checkpointing for FSDP) come from here.
    std::vector<Flag> flags;
    if (backend == Backend::DeepSpeed)
      flags.push_back({"deepspeed", options.deepSpeedConfigPath});
    // The hf backend shards with FSDP (no ZeRO-1 there): ZeRO-3 is
    // full_shard, ZeRO-2 shard_grad_op, each decoder layer a unit; offload
    // moves parameters and optimizer together.
    const cost::Strategy &s = m->strategy;
    if (backend == Backend::HF && s.zero > 0) {
      std::string fsdp = s.zero == 3 ? "full_shard" : "shard_grad_op";
      if (s.offload == cost::Offload::OptimizerAndParams)
        fsdp += " offload";
      flags.push_back({"fsdp", fsdp + " auto_wrap"});
    }
    flags.insert(flags.end(), trainer->begin(), trainer->end());
    os << "# " << options.trainingScript
       << ": an HF Trainer script (HfArgumentParser over TrainingArguments); "
          "add its model and data flags, and --max_steps N or "
          "--num_train_epochs N\n";
    JobOp job = m->job;
    if (job.getMethod() != Method::Full) {
      LoraAttr lora = job.getLoraAttr();
      std::string targets;
      for (Attribute a : lora.getTargets())
        targets += std::string(targets.empty() ? "" : ", ") + "\"" +
                   cast<StringAttr>(a).getValue().str() + "\"";
      os << llvm::formatv("# it wraps the model in peft's LoraConfig(r={0}, "
                          "lora_alpha={1}, lora_dropout={2}, "
                          "target_modules={3})\n",
                          lora.getRank(),
                          exactNumber(lora.getAlpha().convertToDouble()),
                          exactNumber(lora.getDropout().convertToDouble()),
                          targets == "\"all-linear\"" ? targets
                                                      : "[" + targets + "]");
      if (job.getMethod() == Method::QLora) {
        const char *dtype = job.getPrecision() == Precision::Fp32
                                ? "torch.float32"
                                : "torch.bfloat16";
        // Sharding 4-bit weights (ZeRO-3, FSDP) needs them stored in a
        // float dtype the shards can be flat views of.
        const bool sharded =
            (backend == Backend::DeepSpeed && m->strategy.zero == 3) ||
            (backend == Backend::HF && m->strategy.zero > 0);
        os << "# after loading the base with BitsAndBytesConfig(load_in_4bit="
              "True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant="
              "True, bnb_4bit_compute_dtype="
           << dtype
           << (sharded ? std::string(", bnb_4bit_quant_storage=") + dtype : "")
           << ")\n";
      }
    }
    if (backend == Backend::DeepSpeed)
      if (std::string why = deepSpeedUpdateDifference(module); !why.empty())
        os << "# " << why << "\n";
    if (nodes > 1)
      os << "# On every node, with MASTER_ADDR set to node 0's address:\n";
    os << torchrun << " " << options.trainingScript
       << commandLine(flags, "    ") << "\n";
    if (nodes == 1)
      os << llvm::formatv("# the same script and flags run under `deepspeed "
                          "--num_gpus={0} {1} ...` or `accelerate launch "
                          "--num_processes={0} {1} ...`\n",
                          perNode, options.trainingScript);
    return success();
  }

  const std::string &plan = options.planPath;
  if (nodes == 1) {
    os << "swift-run " << plan << " --nproc-per-node " << perNode << "\n";
    os << "# or, under torchrun:\n";
    os << "# " << torchrun << " --no-python swift-run " << plan << "\n";
    return success();
  }
  os << "# On every node, with MASTER_ADDR set to node 0's address:\n";
  os << torchrun << " --no-python swift-run " << plan << "\n";
  os << llvm::formatv(
      "# or without torchrun, on node NODE_RANK (0..{0}), one process per "
      "GPU:\n"
      "# for LOCAL_RANK in $(seq 0 {1}); do\n"
      "#   RANK=$((NODE_RANK * {2} + LOCAL_RANK)) WORLD_SIZE={3} "
      "LOCAL_RANK=$LOCAL_RANK LOCAL_WORLD_SIZE={2} \\\n"
      "#   MASTER_ADDR=$MASTER_ADDR MASTER_PORT={4} swift-run {5} &\n"
      "# done; wait\n",
      nodes - 1, perNode - 1, perNode, world, options.masterPort, plan);
  return success();
}

} // namespace swift::emit
