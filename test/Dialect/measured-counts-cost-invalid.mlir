// RUN: swift-opt %s -split-input-file -verify-diagnostics
// The verifiers of #swift.measured, #swift.counts and #swift.op_cost, and
// of the dialect's one discardable attribute, swift.cost.

// expected-error @+1 {{measured: matmul_tflops must be a finite number >= 0, not -1.0}}
func.func private @f() attributes {m = #swift.measured<matmul_tflops = -1.0>}

// -----

// expected-error @+1 {{measured: elementwise_gbps must be a finite number >= 0, not nan}}
func.func private @f() attributes {m = #swift.measured<elementwise_gbps = 0x7FF8000000000000>}

// -----

// expected-error @+1 {{counts: parameters must be >= 0, not -5}}
func.func private @f() attributes {c = #swift.counts<parameters = -5, trainable_parameters = 0, tokens_per_step = 1>}

// -----

// expected-error @+1 {{counts: trainable_parameters (9) exceed parameters (8)}}
func.func private @f() attributes {c = #swift.counts<parameters = 8, trainable_parameters = 9, tokens_per_step = 1>}

// -----

// expected-error @+1 {{op_cost: saved_bytes must be >= 0, not -1}}
func.func private @f() attributes {c = #swift.op_cost<forward_flops = 1, backward_flops = 1, recompute_flops = 0, saved_bytes = -1>}

// -----

// expected-error @+1 {{'swift.cost' must be a #swift.op_cost, not {forward_flops = 1 : i64}}}
func.func private @f(%x: tensor<?x8x16xbf16>, %w: tensor<32x16xbf16>) -> tensor<?x8x32xbf16> attributes {swift.cost = {forward_flops = 1 : i64}}

// -----

// expected-error @+1 {{'swift.cost' belongs on an op with CostOpInterface}}
func.func private @f() attributes {swift.cost = #swift.op_cost<forward_flops = 1, backward_flops = 1, recompute_flops = 0, saved_bytes = 0>}

// -----

// The counts are the job's typed `counts`, not loose attributes.
// expected-error @+1 {{unknown attribute 'swift.parameters' of the swift dialect (its only discardable attribute is 'swift.cost')}}
func.func private @f() attributes {swift.parameters = 8 : i64}
