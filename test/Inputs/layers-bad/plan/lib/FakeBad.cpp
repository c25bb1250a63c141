#include "swift/Plan/FakePlan.h"
#include "swift/Passes/FakePasses.h"
#include "swift/Runtime/FakeRuntime.h"
#include "mlir/IR/FakeBuilders.h"
/*
#include "swift/Emit/FakeEmit.h"
*/
