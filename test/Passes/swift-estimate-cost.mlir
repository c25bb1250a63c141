// RUN: swift-plan %S/../swift-plan/Inputs/tiny-job.yaml --compile-to strategy --emit mlir \
// RUN:   | swift-opt --swift-estimate-cost | FileCheck %s
// RUN: swift-plan %S/../swift-plan/Inputs/tiny-job.yaml --compile-to annotate --emit mlir \
// RUN:   | not swift-opt --swift-estimate-cost 2>&1 | FileCheck %s --check-prefix=OPEN
// RUN: swift-plan %S/../swift-plan/Inputs/tiny-job.yaml --set backend=hf --set strategy.zero=auto \
// RUN:   --compile-to strategy --emit mlir | sed 's/zero = zero[0-3]/zero = zero1/' \
// RUN:   | not swift-opt --swift-estimate-cost 2>&1 | FileCheck %s --check-prefix=BACKEND

// Every op of the model gets its FLOPs and saved bytes per micro-batch
// (recompute under full checkpointing), the job its estimate.
// CHECK: swift.linear
// CHECK-SAME: swift.cost = #swift.op_cost<forward_flops = [[FWD:[1-9][0-9]*]], backward_flops = {{[1-9][0-9]*}}, recompute_flops = [[FWD]], saved_bytes = {{[0-9]+}}>
// CHECK: swift.job @job
// CHECK-SAME: estimate = #swift.estimate<peak_bytes = [[PEAK:[1-9][0-9]*]], capacity_bytes = {{[1-9][0-9]*}}, peak_phase = "{{forward|backward|optimizer}}", peak_layer = {{-?[0-9]+}},
// CHECK-SAME: breakdown = {
// CHECK-SAME: step_seconds = {{[0-9.e+-]+}}, compute_seconds =
// CHECK-SAME: tokens_per_second = {{[0-9.e+-]+}}, mfu = {{[0-9.e+-]+}},
// The step's timeline, in order, its largest point the peak (the verifier
// checks it): the first layer's forward first, the optimizer last.
// CHECK-SAME: timeline = [#swift.memory_point<phase = "forward", layer = 0, op = "decoder layer", bytes = {{[0-9]+}}>,
// CHECK-SAME: #swift.memory_point<phase = "backward", layer = 0, op = "decoder layer", bytes = {{[0-9]+}}>
// CHECK-SAME: #swift.memory_point<phase = "optimizer", layer = -1, op = "step", bytes = {{[0-9]+}}>]>

// OPEN: error: 'swift.job' op strategy is not complete (open: training.micro_batch_size, training.gradient_accumulation); fix every decision before estimating

// BACKEND: error: 'swift.job' op backend hf cannot run this strategy:
