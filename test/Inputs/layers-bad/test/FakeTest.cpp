#include "swift/Runtime/FakeRuntime.h"
#include "swift/Legacy/FakeLegacy.h"
