#include "../../tools/x/FakeUtil.h"
