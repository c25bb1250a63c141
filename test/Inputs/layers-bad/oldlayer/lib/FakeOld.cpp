#include "swift/Plan/FakePlan.h"
