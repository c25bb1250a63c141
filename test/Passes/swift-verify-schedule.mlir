// Every materialized schedule verifies: ZeRO 0-3, with and without offload,
// first-k checkpointing, several buckets.
// RUN: sed 's/STRATEGY/zero = zero0, offload = none, checkpointing = none/; s/GPUS/1/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives --swift-place-optimizer \
// RUN:     --swift-materialize-offload --swift-verify-schedule | FileCheck %s --check-prefix=OK
// RUN: sed 's/STRATEGY/zero = zero1, offload = optimizer, checkpointing = full, checkpoint_layers = 1/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives=bucket-bytes=2000 \
// RUN:     --swift-place-optimizer --swift-materialize-offload --swift-verify-schedule | FileCheck %s --check-prefix=OK
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = selective/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives=bucket-bytes=1 \
// RUN:     --swift-place-optimizer --swift-materialize-offload --swift-verify-schedule | FileCheck %s --check-prefix=OK
// RUN: sed 's/STRATEGY/zero = zero3, offload = optimizer_params, checkpointing = full, checkpoint_layers = 1/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives=prefetch-depth=2 \
// RUN:     --swift-place-optimizer --swift-materialize-offload --swift-verify-schedule | FileCheck %s --check-prefix=OK
// OK: swift.optimizer_step

// The cases below break one rule each in a ZeRO-3 (or ZeRO-1) schedule and
// check the verifier names it: %t.z3 has full checkpointing of layer 0 and
// parameter offload, %t.z1 optimizer offload and 2000-byte buckets. The
// rules plan.json has too are plan/'s checkSchedule(), so their messages are
// swift-run's (test/Plan/PlanTest.cpp), reported at the op of the entry.
// RUN: sed 's/STRATEGY/zero = zero3, offload = optimizer_params, checkpointing = full, checkpoint_layers = 1/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives --swift-place-optimizer \
// RUN:     --swift-materialize-offload -o %t.z3
// RUN: sed 's/STRATEGY/zero = zero1, offload = optimizer, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives=bucket-bytes=2000 \
// RUN:     --swift-place-optimizer --swift-materialize-offload -o %t.z1

// A unit never released stays gathered past backward.
// RUN: sed '/swift.release unit 1$/d' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=RELEASE
// RELEASE: error: 'swift.program' op unit 1 is still gathered after backward; release it (ZeRO-3 reshards every unit each micro-batch)

// A unit computed without its gather.
// RUN: sed '0,/swift.all_gather unit 0 ahead 0/{//d}' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=GATHER
// GATHER: error: 'swift.compute' op unit 0 needs the parameters of unit 0, which are not gathered

// A checkpointed unit must be recomputed in backward.
// RUN: sed 's/ recompute$//' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=RECOMPUTE
// RECOMPUTE: error: 'swift.compute' op must recompute its checkpointed unit

// Units run in autograd's order, each once.
// RUN: sed 's/swift.compute unit 2$/swift.compute unit 1/' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: error: 'swift.compute' op forward must compute units in order 0..3

// A prefetch position names a unit that reads the gathered parameters.
// RUN: sed '0,/all_gather unit 1 ahead 1/s//all_gather unit 1 ahead 2/' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 \
// RUN:   | FileCheck %s --check-prefix=AHEAD
// AHEAD: error: 'swift.all_gather' op gathers unit 1 2 unit(s) ahead of unit 0, but the unit there does not read it

// A bucket's size is its units' fp32 gradients.
// RUN: sed 's/bytes 5312/bytes 4096/' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=BYTES
// BYTES: error: 'swift.bucket' op says 4096 bytes but its units' fp32 gradients take 5312

// The bucket's collective follows the stage.
// RUN: sed 's/units \[3, 2, 1, 0\] reduce_scatter/units [3, 2, 1, 0] all_reduce/; s/swift.reduce_scatter bucket/swift.all_reduce bucket/' %t.z3 \
// RUN:   | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=COLLECTIVE
// COLLECTIVE: error: 'swift.bucket' op zero 3 reduces gradients with reduce_scatter

// ZeRO-3 keeps only gradient shards: it must reduce every micro-batch.
// RUN: sed 's/ every_micro_batch//' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=EVERY
// EVERY: error: 'swift.bucket' op zero >= 2 keeps only gradient shards, so it must reduce every micro-batch

// Every bucket is reduced by the backward program.
// RUN: sed '/swift.reduce_scatter bucket 1/d; /copy grads device_to_host bucket 1/d' %t.z1 | not swift-opt --swift-verify-schedule 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEVER
// NEVER: error: 'swift.bucket' op never reduced by the backward program

// A reduction before its bucket's gradients are final.
// RUN: sed '/swift.reduce_scatter bucket 1/d; /program backward/,$s/swift.compute unit 3$/swift.compute unit 3\n      swift.reduce_scatter bucket 1 on communication/' %t.z1 \
// RUN:   | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=EARLY
// EARLY: error: 'swift.reduce_scatter' op bucket 1 holds unit 0, whose gradients are not final yet

// Below ZeRO-3 parameters are replicated: nothing to gather.
// RUN: sed '0,/swift.compute unit 0$/s//swift.all_gather unit 0 ahead 0 on communication\n      swift.compute unit 0/' %t.z1 \
// RUN:   | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=REPLICATED
// REPLICATED: error: 'swift.all_gather' op gather/release need zero 3 (parameters are replicated at zero 1)

// Collectives run on the communication stream swift-run overlaps.
// RUN: sed '0,/ahead 0 on communication/s//ahead 0 on compute/' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 \
// RUN:   | FileCheck %s --check-prefix=STREAM
// STREAM: error: 'swift.all_gather' op must run on the communication stream

// With offload, reduced gradients go to the host.
// RUN: sed '/copy grads device_to_host bucket 0/d' %t.z1 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=GRADCOPY
// GRADCOPY: error: 'swift.reduce_scatter' op must be followed by the copy of bucket 0's gradients to the host optimizer

// With parameter offload, a released shard is copied in before its gather.
// RUN: sed '/copy params host_to_device unit 2/d' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=PARAMCOPY
// PARAMCOPY: error: 'swift.all_gather' op gathers a host-resident shard without copying it to the device first

// Optimizer offload copies the updated parameters back.
// RUN: sed '/swift.copy params host_to_device$/d' %t.z1 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=COPYBACK
// COPYBACK: error: 'swift.schedule' op needs one copy of the updated parameters back to the device

// The optimizer runs where its states are.
// RUN: sed 's/optimizer_step on cpu/optimizer_step on accelerator/' %t.z1 | not swift-opt --swift-verify-schedule 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DEVICE
// DEVICE: error: 'swift.optimizer_step' op must be "cpu" exactly when strategy.offload is not "none"

// ZeRO-1 all-gathers the updated parameter shards.
// RUN: sed 's/ gather_params//' %t.z1 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=GATHERPARAMS
// GATHERPARAMS: error: 'swift.optimizer_step' op zero 1/2 must all-gather the updated parameters

// The units follow the strategy's checkpointing.
// RUN: sed 's/params 400 checkpoint <full>/params 400/' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=CKPT
// CKPT: error: 'swift.unit' op "none" disagrees with the strategy ("full" from strategy.checkpointing "full", checkpoint_layers 1)

// An unfinished schedule is reported, not accepted.
// RUN: sed 's/STRATEGY/zero = zero3, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=UNFINISHED
// UNFINISHED: error: 'swift.schedule' op has no forward program

// Each program op belongs to a compute (ScheduleOp::translate(), the
// translation plan.json is written with): a release before the first one
// follows none, a gather after the last one serves none. A schedule whose
// programs are complete needs its optimizer step.
// RUN: sed '0,/swift.program forward {/s//swift.program forward {\n      swift.release unit 0/' %t.z3 \
// RUN:   | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=BEFORE
// BEFORE: error: 'swift.release' op comes before any compute; it belongs after the compute it follows
// RUN: sed 's/swift.copy grads device_to_host bucket 0/&\n      swift.all_gather unit 0 ahead 0 on communication/' %t.z3 \
// RUN:   | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=AFTER
// AFTER: error: 'swift.all_gather' op comes after the last compute and serves none
// RUN: sed '/swift.optimizer_step on cpu/d' %t.z3 | not swift-opt --swift-verify-schedule 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: error: 'swift.schedule' op has no optimizer step
