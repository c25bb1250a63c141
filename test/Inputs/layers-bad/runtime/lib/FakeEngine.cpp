#include "swift/Runtime/FakeRuntime.h"
#include "swift/Data/FakeTokenizer.h"
#include "swift/Plan/FakePlan.h"
#include <torch/torch.h>
#include <cuda_runtime.h>
#include "swift/Job/FakeJob.h"
#include "llvm/ADT/FakeStringRef.h"
