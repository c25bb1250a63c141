#include "swift/Passes/Pipelines.h"
#include "swift/Passes/Passes.h"
#include "swift/Passes/FakeProfile.h"
#include "swift/Emit/FakeEmit.h"
