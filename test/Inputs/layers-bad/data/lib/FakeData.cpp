#include "swift/Data/FakeTokenizer.h"
#include "swift/Plan/FakePlan.h"
#include "swift/Runtime/FakeRuntime.h"
#include <torch/torch.h>
// std::filesystem::remove_all(dir) in a comment is no call
void f() { std::filesystem::remove_all(dir, ec); /* remove_all( */ }
