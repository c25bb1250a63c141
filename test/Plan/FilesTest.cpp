//===- FilesTest.cpp - removeTree ------------------------------------------===//
#include "swift/Plan/Files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using swift::plan::removeTree;

namespace {

fs::path scratch(const char *name) {
  fs::path p = fs::temp_directory_path() /
               (std::string("swift-files-") + name + "-" + std::to_string(::getpid()));
  fs::create_directories(p);
  return p;
}

void touch(const fs::path &p) { std::ofstream(p) << "x"; }

} // namespace

TEST(Files, RemoveTreeRemovesEverythingUnderADirectory) {
  const fs::path root = scratch("tree");
  fs::create_directories(root / "a" / "b" / "c");
  touch(root / "top.bin");
  touch(root / "a" / "mid.bin");
  touch(root / "a" / "b" / "c" / "deep.bin");
  fs::create_directories(root / "empty");
  ASSERT_EQ(removeTree(root.string()), "");
  EXPECT_FALSE(fs::exists(root));
}

TEST(Files, RemoveTreeRemovesLinksNotTheirTargets) {
  const fs::path root = scratch("links"), outside = scratch("outside");
  touch(outside / "keep.bin");
  fs::create_directory_symlink(outside, root / "dir-link");
  fs::create_symlink(outside / "keep.bin", root / "file-link");
  fs::create_symlink(root / "nowhere", root / "dangling");
  ASSERT_EQ(removeTree(root.string()), "");
  EXPECT_FALSE(fs::exists(fs::symlink_status(root)));
  EXPECT_TRUE(fs::exists(outside / "keep.bin"));
  // A link given as the path is removed itself.
  fs::create_directory_symlink(outside, root.string() + "-link");
  ASSERT_EQ(removeTree(root.string() + "-link"), "");
  EXPECT_FALSE(fs::exists(fs::symlink_status(root.string() + "-link")));
  EXPECT_TRUE(fs::exists(outside / "keep.bin"));
  fs::remove(outside / "keep.bin");
  fs::remove(outside);
}

TEST(Files, RemoveTreeTakesAFileAndAMissingPath) {
  const fs::path root = scratch("file");
  touch(root / "one.bin");
  EXPECT_EQ(removeTree((root / "one.bin").string()), "");
  EXPECT_FALSE(fs::exists(root / "one.bin"));
  EXPECT_EQ(removeTree((root / "never").string()), "");
  EXPECT_EQ(removeTree(root.string()), "");
}

TEST(Files, RemoveTreeSaysWhatItCouldNotRemove) {
  // A path through a regular file: lstat fails with ENOTDIR, not ENOENT.
  const fs::path root = scratch("error");
  touch(root / "plain");
  const std::string why = removeTree((root / "plain" / "below").string());
  EXPECT_NE(why.find("plain/below: Not a directory"), std::string::npos) << why;
  EXPECT_EQ(removeTree(root.string()), "");
}
