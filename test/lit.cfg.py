# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "swift"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.swift_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs", "Runtime", "data"]

llvm_config.use_default_substitutions()
# Debian installs FileCheck, not and count only under the LLVM tools dir.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.swift_tools_dir, append_path=True)

# %expect-exit N cmd...: runs cmd and fails unless it exits with N.
config.substitutions.append(
    ("%expect-exit", "sh " + os.path.join(config.test_source_root, "Inputs", "expect-exit.sh")))
config.substitutions.append(
    ("%examples", os.path.join(config.swift_src_root, "examples")))
config.substitutions.append(("%swift_src", config.swift_src_root))
config.substitutions.append(("%swift_tools", config.swift_tools_dir))

# Tests that run plans need swift-run (built unless -DSWIFT_BUILD_RUNTIME=OFF).
if os.path.exists(os.path.join(config.swift_tools_dir, "swift-run")):
    config.available_features.add("swift-run")
