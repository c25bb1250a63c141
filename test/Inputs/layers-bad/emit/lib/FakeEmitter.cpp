#include "swift/Dialect/FakeOps.h"
#include "swift/Passes/FakeProfile.h"
