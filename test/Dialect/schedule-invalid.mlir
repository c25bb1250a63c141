// RUN: swift-opt %s -split-input-file -verify-diagnostics

// Units are listed in index order.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  // expected-error @+1 {{has index 2 but is unit #1}}
  swift.unit 2 head params 8
}

// -----

// The last unit is the head.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  // expected-error @+1 {{unit 1 must be the head}}
  swift.unit 1 decoder layer 0 params 8
}

// -----

// Decoder unit i is layer i-1 (plan.json's rule).
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  // expected-error @+1 {{unit 1 must be decoder layer 0}}
  swift.unit 1 decoder layer 3 params 8
  swift.unit 2 head params 8
}

// -----

// A decoder unit carries its layer index.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  // expected-error @+1 {{a decoder unit needs its layer index}}
  swift.unit 1 decoder params 8
  swift.unit 2 head params 8
}

// -----

// Only decoders are checkpointed.
swift.schedule @s for @job {
  // expected-error @+1 {{only decoder units are checkpointed}}
  swift.unit 0 embedding params 8 checkpoint <full>
  swift.unit 1 head params 8
}

// -----

// A bucket lists each unit once.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
  // expected-error @+1 {{lists unit 1 twice}}
  swift.bucket 0 units [1, 1] all_reduce bytes 64
}

// -----

// A bucket refers to existing units.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
  // expected-error @+1 {{refers to unit 2 of 2}}
  swift.bucket 0 units [2] all_reduce bytes 64
}

// -----

// Gradient reductions happen in backward only.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
  swift.bucket 0 units [1, 0] all_reduce bytes 64
  swift.program forward {
    // expected-error @+1 {{gradient reductions belong to the backward program}}
    swift.all_reduce bucket 0 on communication
  }
}

// -----

// Recompute happens in backward only.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
  swift.program forward {
    // expected-error @+1 {{recompute belongs to the backward program}}
    swift.compute unit 0 recompute
  }
}

// -----

// Steps refer to existing units and buckets.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
  swift.program backward {
    // expected-error @+1 {{refers to bucket 0 of 0}}
    swift.reduce_scatter bucket 0 on communication
  }
}

// -----

// One program per phase.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
  swift.program forward {
  }
  // expected-error @+1 {{duplicate forward program}}
  swift.program forward {
  }
}

// -----

// Gradients leave the device for the host optimizer, never the reverse.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
  swift.bucket 0 units [1, 0] reduce_scatter bytes 64
  swift.program backward {
    // expected-error @+1 {{gradients only move device_to_host}}
    swift.copy grads host_to_device bucket 0
  }
}

// -----

// A parameter copy inside a program names its unit.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
  swift.program forward {
    // expected-error @+1 {{a parameter copy in a program names one unit}}
    swift.copy params host_to_device
  }
}

// -----

// Step ops live in a program.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
  // expected-error @+1 {{expects parent op 'swift.program'}}
  swift.compute unit 0
}

// -----

// Only the head can read the tied embedding table.
swift.schedule @s for @job {
  swift.unit 0 embedding params 8
  // expected-error @+1 {{only the head reads the embedding table}}
  swift.unit 1 decoder layer 0 params 8 reads_embedding
  swift.unit 2 head params 8
}
