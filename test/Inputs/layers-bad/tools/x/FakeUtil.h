#include "swift/Emit/FakeEmit.h"
#include <torch/torch.h>
