#include "swift/Data/FakeTokenizer.h"
#include "swift/Plan/FakePlan.h"
#include "swift/Runtime/FakeRuntime.h"
#include <torch/torch.h>
