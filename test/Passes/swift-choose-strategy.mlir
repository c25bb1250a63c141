// RUN: swift-plan %S/../swift-plan/Inputs/tiny-job.yaml --set strategy.zero=auto \
// RUN:   --set strategy.offload=auto --set strategy.checkpointing=auto \
// RUN:   --compile-to annotate --emit mlir | swift-opt --swift-choose-strategy | FileCheck %s
// RUN: swift-plan %S/../swift-plan/Inputs/tiny-job.yaml --compile-to annotate --emit mlir \
// RUN:   | swift-opt --swift-choose-strategy | FileCheck %s --check-prefix=FIXED
// RUN: swift-plan %S/../swift-plan/Inputs/tiny-job.yaml --set cluster.gpu.memory_gib=0.001 \
// RUN:   --compile-to annotate --emit mlir | swift-opt --swift-choose-strategy \
// RUN:   | FileCheck %s --check-prefix=NOFIT
// RUN: swift-plan %S/../swift-plan/Inputs/tiny-job.yaml --set strategy.zero=auto \
// RUN:   --set strategy.offload=auto --set strategy.checkpointing=auto --compile-to annotate \
// RUN:   --emit mlir | swift-opt '--swift-choose-strategy=memory-margin=0.5 alternatives=1' \
// RUN:   | FileCheck %s --check-prefix=OPTIONS
// RUN: swift-plan %S/../swift-plan/Inputs/tiny-job.yaml --set training.micro_batch_size=4 \
// RUN:   --compile-to annotate --emit mlir | sed 's/micro_batch_size = 4/micro_batch_size = 3/' | not swift-opt --swift-choose-strategy 2>&1 \
// RUN:   | FileCheck %s --check-prefix=INDIVISIBLE

// Open keys: the search fills the job's strategy, micro-batch and gradient
// accumulation (2 GPUs x micro x accumulation = the global batch of 8), and
// records the decision with the runners-up and why each lost.
// CHECK: swift.job @job
// CHECK-SAME: decision = #swift.decision<fits = true, usable_bytes = {{[0-9]+}}, memory_margin = 0.1, evaluated = {{[1-9][0-9]*}}, considered = {{[1-9][0-9]*}},
// CHECK-SAME: chosen = <zero = [[ZERO:[0-3]]], offload = [[OFF:[a-z_]+]], checkpointing = [[CKPT:[a-z]+]], checkpoint_layers = -1, micro_batch_size = [[MICRO:[0-9]+]], gradient_accumulation = [[ACC:[0-9]+]], fits = true,
// CHECK-SAME: verdict = "chosen", breakdown = {activations = {{[0-9]+}} : i64, {{[^}]*}}parameters = {{[0-9]+}} : i64}>
// CHECK-SAME: alternatives = [#swift.candidate<
// CHECK-SAME: gradient_accumulation = [[ACC]] : i64
// CHECK-SAME: micro_batch_size = [[MICRO]] : i64
// CHECK-SAME: strategy = #swift.strategy<zero = zero[[ZERO]], offload = [[OFF]], checkpointing = [[CKPT]], bucket_bytes = {{[0-9]+}}, prefetch_depth = {{[0-9]+}}>

// Keys the job fixes stay as they are.
// FIXED: chosen = <zero = 3, offload = none, checkpointing = full,
// FIXED: strategy = #swift.strategy<zero = zero3, offload = none, checkpointing = full,

// Nothing fits: the job holds the closest strategy and the shortfall.
// NOFIT: decision = #swift.decision<fits = false,
// NOFIT-SAME: closest = <zero = 3, offload = none, checkpointing = full,
// NOFIT-SAME: fits = false,
// NOFIT-SAME: shortfall_bytes = {{[1-9][0-9]*}}
// NOFIT-NOT: chosen =

// The pass options reach the search.
// OPTIONS: decision = #swift.decision<fits = true, usable_bytes = {{[0-9]+}}, memory_margin = 0.5,
// OPTIONS-SAME: alternatives = [#swift.candidate<{{[^#]*}}>]>

// A fixed micro-batch that does not divide a GPU's share of the batch.
// INDIVISIBLE: error: training.micro_batch_size: 3 does not divide the 4 sequences each GPU gets per step
