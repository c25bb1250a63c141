// The engine room's header.
#include "swift/Runtime/model/FakeModel.h"
