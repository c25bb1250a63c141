// Allowed: plain C++ and the standard library.
#include <string>
#include <nlohmann/json.hpp>
