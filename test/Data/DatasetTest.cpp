//===- DatasetTest.cpp - tokenizing once: threads, order, cache, memory ----===//
//
// data::TokenizedFile (Dataset.h) against the line-by-line LineToSample it
// parallelizes: the same samples in the same order at any thread count,
// the first bad line in file order whatever thread meets it, a token cache
// that is reused by content and never by mistake, concurrent openers that
// tokenize once, a full disk that leaves no entry behind, and host memory
// that does not grow with the file.
//
//===----------------------------------------------------------------------===//

#include "swift/Data/Dataset.h"
#include "swift/Data/SampleEncoder.h"
#include "swift/Plan/Error.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace swift::data {
namespace {

namespace fs = std::filesystem;

/// A fresh directory under the test's temporary root.
std::string freshDir(const std::string &name) {
  const std::string dir = (fs::temp_directory_path() /
                           ("swift-dataset-test-" + std::to_string(::getpid())) /
                           name)
                              .string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// Token-id lines: line i (0-based) holds 1 + (i * 7919) % 50 ids, labels
/// -100 on its first half; blank lines every 97th; `odd` adds a label that
/// is neither its id nor -100 on that line (an explicit label).
std::string writeIdLines(const std::string &path, int64_t lines,
                         int64_t odd = -1) {
  std::ofstream out(path);
  for (int64_t i = 0; i < lines; ++i) {
    if (i % 97 == 96) {
      out << "\n";
      continue;
    }
    const int64_t n = 1 + (i * 7919) % 50;
    std::ostringstream ids, labels;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t id = (i * 31 + k * 17) % 1000;
      ids << (k ? "," : "") << id;
      labels << (k ? "," : "")
             << (i == odd && k == n - 1 ? (id + 1) % 1000
                 : k < n / 2            ? -100
                                        : id);
    }
    out << "{\"input_ids\": [" << ids.str() << "], \"labels\": ["
        << labels.str() << "]}\n";
  }
  return path;
}

/// Every sample of `f` as the LineToSample makes it, line by line.
void expectSameAsLineByLine(const TokenizedFile &f, const std::string &path,
                            int64_t vocab) {
  LineToSample toSample = tokenIdsLines(vocab);
  LineReader in(path);
  std::string line;
  int64_t s = 0;
  while (in.next(line)) {
    std::optional<jsonl::Sample> want =
        toSample(line, path + ": line " + std::to_string(in.number()));
    if (!want)
      continue;
    ASSERT_LT(s, f.samples());
    const SampleInfo info = f.info(s);
    ASSERT_EQ(info.line, in.number());
    ASSERT_EQ(info.length, int64_t(want->ids.size()));
    std::vector<int64_t> ids(size_t(info.length)), labels(size_t(info.length));
    f.read(s, 0, info.length, ids.data(), labels.data());
    int64_t trained = 0;
    for (int64_t k = 0; k < info.length; ++k) {
      ASSERT_EQ(ids[size_t(k)], want->ids[size_t(k)]) << "line " << info.line;
      ASSERT_EQ(labels[size_t(k)], want->labels[size_t(k)])
          << "line " << info.line;
      trained += k > 0 && want->labels[size_t(k)] != jsonl::kIgnore;
    }
    ASSERT_EQ(info.trained, trained);
    ++s;
  }
  EXPECT_EQ(s, f.samples());
}

TokenizeOptions options(int threads, const std::string &cache = "") {
  TokenizeOptions o;
  o.vocab = 1000;
  o.threads = threads;
  o.cacheDir = cache;
  return o;
}

TEST(Dataset, WithoutACacheTheTokensLiveInATemporaryDirectoryWhileMapped) {
  const std::string dir = freshDir("uncached");
  const std::string path = writeIdLines(dir + "/data.jsonl", 300);
  const std::string tmp = dir + "/tmp";
  fs::create_directories(tmp);
  ::setenv("TMPDIR", tmp.c_str(), 1);
  auto f = TokenizedFile::open(path, options(2));
  ::unsetenv("TMPDIR");
  EXPECT_EQ(f->cacheEntry(), "");
  // Its files stay until it is gone, then nothing is left.
  ASSERT_EQ(std::distance(fs::directory_iterator(tmp), fs::directory_iterator()), 1);
  expectSameAsLineByLine(*f, path, 1000);
  f.reset();
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp), fs::directory_iterator()), 0);
}

TEST(Dataset, EveryThreadCountGivesTheLinesSamplesInFileOrder) {
  const std::string dir = freshDir("order");
  // ~1.3 MB: several chunks of about 1 MiB.
  const std::string path = writeIdLines(dir + "/data.jsonl", 12000);
  for (int threads : {1, 3, 8}) {
    auto f = TokenizedFile::open(path, options(threads));
    EXPECT_FALSE(f->reused());
    expectSameAsLineByLine(*f, path, 1000);
  }
}

TEST(Dataset, ALabelNeitherIdNorIgnoreLateInTheFileIsKeptExactly) {
  const std::string dir = freshDir("labels");
  // The odd label on the last line: the labels of every chunk before it are
  // written back from the ids already on disk.
  const std::string path = writeIdLines(dir + "/data.jsonl", 12000, 11998);
  auto f = TokenizedFile::open(path, options(4, dir + "/cache"));
  expectSameAsLineByLine(*f, path, 1000);
  auto again = TokenizedFile::open(path, options(4, dir + "/cache"));
  EXPECT_TRUE(again->reused());
  expectSameAsLineByLine(*again, path, 1000);
}

TEST(Dataset, TheFirstBadLineInFileOrderIsTheErrorWhateverThreadMeetsIt) {
  const std::string dir = freshDir("bad");
  const std::string path = writeIdLines(dir + "/data.jsonl", 12000);
  // Two bad lines in different chunks: line 9001's error is found first by
  // some thread, but line 3001's comes first in the file.
  std::vector<std::string> lines;
  {
    std::ifstream in(path);
    for (std::string l; std::getline(in, l);)
      lines.push_back(l);
  }
  lines[3000] = "{\"input_ids\": [1, 2, 5000]}";
  lines[9000] = "not json";
  {
    std::ofstream out(path);
    for (const std::string &l : lines)
      out << l << "\n";
  }
  for (int threads : {1, 8}) {
    try {
      TokenizedFile::open(path, options(threads, dir + "/cache"));
      FAIL() << "no error";
    } catch (const plan::UserError &e) {
      EXPECT_NE(std::string(e.what()).find("data.jsonl: line 3001: "),
                std::string::npos)
          << e.what();
    }
  }
  // Nothing is left in the cache but the lock.
  for (const auto &entry : fs::directory_iterator(dir + "/cache/tokens"))
    EXPECT_NE(entry.path().string().find(".lock"), std::string::npos)
        << entry.path();
}

TEST(Dataset, TheCacheIsKeyedByContentAndTheSamplesMaker) {
  const std::string dir = freshDir("cache");
  const std::string cache = dir + "/cache";
  const std::string a = writeIdLines(dir + "/a.jsonl", 500);
  auto first = TokenizedFile::open(a, options(2, cache));
  EXPECT_FALSE(first->reused());
  EXPECT_TRUE(TokenizedFile::open(a, options(2, cache))->reused());
  // The same bytes elsewhere: the same entry.
  fs::copy_file(a, dir + "/copy.jsonl");
  auto copy = TokenizedFile::open(dir + "/copy.jsonl", options(2, cache));
  EXPECT_TRUE(copy->reused());
  EXPECT_EQ(copy->cacheEntry(), first->cacheEntry());
  // Another vocabulary is another maker of samples: another entry.
  TokenizeOptions other = options(2, cache);
  other.vocab = 2000;
  EXPECT_FALSE(TokenizedFile::open(a, other)->reused());
  // A changed file (one byte, same size, its mtime set back as rsync -t
  // would) is tokenized again: its content, not its name, size or mtime,
  // is the key.
  const auto mtime = fs::last_write_time(a);
  {
    std::fstream f(a, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(15); // the first id of the first line: {"input_ids": [0
    f.put('8');
  }
  fs::last_write_time(a, mtime);
  auto changed = TokenizedFile::open(a, options(2, cache));
  EXPECT_FALSE(changed->reused());
  EXPECT_NE(changed->cacheEntry(), first->cacheEntry());
  expectSameAsLineByLine(*changed, a, 1000);
  // A lineToSample without a key cannot be cached.
  TokenizeOptions unkeyed = options(2, cache);
  unkeyed.lineToSample = tokenIdsLines(1000);
  EXPECT_EQ(TokenizedFile::open(a, unkeyed)->cacheEntry(), "");
}

TEST(Dataset, ADamagedEntryIsBuiltAgain) {
  const std::string dir = freshDir("damaged");
  const std::string a = writeIdLines(dir + "/a.jsonl", 500);
  auto first = TokenizedFile::open(a, options(2, dir + "/cache"));
  const std::string entry = first->cacheEntry();
  first.reset();
  fs::resize_file(entry + "/ids.u32", 8); // a crash, a full disk, a user
  auto again = TokenizedFile::open(a, options(2, dir + "/cache"));
  EXPECT_FALSE(again->reused());
  expectSameAsLineByLine(*again, a, 1000);
  again.reset();
  // Records that point past the tokens, at the right sizes: built again
  // rather than read out of bounds.
  {
    std::fstream f(entry + "/samples.bin",
                   std::ios::in | std::ios::out | std::ios::binary);
    const uint64_t start = uint64_t(1) << 40;
    f.write(reinterpret_cast<const char *>(&start), sizeof start);
  }
  auto rebuilt = TokenizedFile::open(a, options(2, dir + "/cache"));
  EXPECT_FALSE(rebuilt->reused());
  expectSameAsLineByLine(*rebuilt, a, 1000);
}

TEST(Dataset, AKilledBuildersLeftoversGoWithTheNextBuild) {
  const std::string dir = freshDir("killed");
  const std::string a = writeIdLines(dir + "/a.jsonl", 300);
  auto first = TokenizedFile::open(a, options(2, dir + "/cache"));
  const std::string entry = first->cacheEntry();
  first.reset();
  // A builder killed mid-way (another pid) left its temporary directory,
  // and the entry was never renamed into place.
  fs::rename(entry, entry + ".tmp.99999999");
  auto again = TokenizedFile::open(a, options(2, dir + "/cache"));
  EXPECT_FALSE(again->reused());
  EXPECT_FALSE(fs::exists(entry + ".tmp.99999999"));
  expectSameAsLineByLine(*again, a, 1000);
}

TEST(Dataset, ConcurrentOpenersTokenizeOnce) {
  const std::string dir = freshDir("concurrent");
  const std::string a = writeIdLines(dir + "/a.jsonl", 8000);
  std::vector<std::shared_ptr<const TokenizedFile>> got(4);
  std::vector<std::thread> openers;
  for (size_t i = 0; i < got.size(); ++i)
    openers.emplace_back(
        [&, i] { got[i] = TokenizedFile::open(a, options(2, dir + "/cache")); });
  for (std::thread &t : openers)
    t.join();
  int built = 0;
  for (auto &f : got) {
    built += !f->reused();
    EXPECT_EQ(f->cacheEntry(), got[0]->cacheEntry());
    expectSameAsLineByLine(*f, a, 1000);
  }
  EXPECT_EQ(built, 1);
}

/// Which lock notesWhileLockedFor holds: the entry's (tokenizing) or the
/// data file's content hash's (hashing).
enum class Held { Entry, Hash };

/// What an opener of `a` notes while another process holds `held`'s lock
/// for `holdSeconds`, when a wait is worth a note after `noteAfter`
/// seconds. The entry (and, for Hash, the remembered hash) is removed
/// first, so that the opener needs the lock.
std::string notesWhileLockedFor(const std::string &a, const std::string &cache,
                                Held held, double holdSeconds, double noteAfter) {
  auto first = TokenizedFile::open(a, options(2, cache));
  const std::string entry = first->cacheEntry();
  first.reset();
  fs::remove_all(entry);
  std::string lockPath = entry + ".lock";
  if (held == Held::Hash) {
    // DIR/files holds the remembered hash and its lock.
    for (const auto &e : fs::directory_iterator(cache + "/files"))
      if (e.path().extension() != ".lock") {
        lockPath = e.path().string() + ".lock";
        fs::remove(e.path());
      }
  }
  const int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT, 0644);
  EXPECT_GE(fd, 0) << lockPath;
  EXPECT_EQ(::flock(fd, LOCK_EX), 0);
  std::ostringstream notes;
  std::shared_ptr<const TokenizedFile> got;
  std::thread opener([&] {
    TokenizeOptions o = options(2, cache);
    o.notes = &notes;
    o.waitNoteAfterSeconds = noteAfter;
    got = TokenizedFile::open(a, o);
  });
  std::this_thread::sleep_for(std::chrono::duration<double>(holdSeconds));
  ::close(fd);
  opener.join();
  EXPECT_FALSE(got->reused());
  expectSameAsLineByLine(*got, a, 1000);
  return notes.str();
}

TEST(Dataset, OnlyALongWaitForAnotherProcessIsNoted) {
  const std::string dir = freshDir("wait-note");
  const std::string a = writeIdLines(dir + "/a.jsonl", 300);
  // A peer rank holds the lock briefly: no line.
  EXPECT_EQ(notesWhileLockedFor(a, dir + "/cache", Held::Entry, 0.5, 30), "");
  // Another run holds it longer than the note's delay: one line, naming
  // the data file and the lock.
  const std::string noted =
      notesWhileLockedFor(a, dir + "/cache", Held::Entry, 1.0, 0.2);
  EXPECT_NE(noted.find("waiting for another process tokenizing " + a), std::string::npos)
      << noted;
  EXPECT_EQ(std::count(noted.begin(), noted.end(), '\n'), 1) << noted;
}

TEST(Dataset, OneProcessHashesTheDataFileAtATime) {
  // The ranks of a run start together: the first hashes the file, the
  // others wait for the hash it remembers instead of reading the file too.
  const std::string dir = freshDir("hash-lock");
  const std::string a = writeIdLines(dir + "/a.jsonl", 300);
  const std::string noted =
      notesWhileLockedFor(a, dir + "/cache", Held::Hash, 1.0, 0.2);
  EXPECT_NE(noted.find("waiting for another process hashing " + a), std::string::npos)
      << noted;
}

TEST(Dataset, AFullDiskIsAnErrorNamingTheCacheAndLeavesNoEntry) {
  const std::string dir = freshDir("full");
  const std::string a = writeIdLines(dir + "/a.jsonl", 12000);
  // A file size limit stands for a full disk: writes past it fail (EFBIG).
  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*oldHandler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    TokenizedFile::open(a, options(2, dir + "/cache"));
  } catch (const plan::UserError &e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, oldHandler);
  EXPECT_NE(error.find("the token cache " + dir + "/cache"), std::string::npos)
      << error;
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
  for (const auto &entry : fs::directory_iterator(dir + "/cache/tokens"))
    EXPECT_NE(entry.path().string().find(".lock"), std::string::npos)
        << entry.path();
  // With room again, the same call succeeds.
  expectSameAsLineByLine(*TokenizedFile::open(a, options(2, dir + "/cache")),
                         a, 1000);
}

TEST(Dataset, ACacheDirectoryThatCannotBeMadeCostsTheCacheNotTheRun) {
  const std::string dir = freshDir("readonly");
  const std::string a = writeIdLines(dir + "/a.jsonl", 300);
  std::ofstream(dir + "/file") << "x"; // a file where a directory should be
  std::ostringstream notes;
  TokenizeOptions o = options(2, dir + "/file/cache");
  o.notes = &notes;
  auto f = TokenizedFile::open(a, o);
  EXPECT_EQ(f->cacheEntry(), "");
  expectSameAsLineByLine(*f, a, 1000);
  EXPECT_NE(notes.str().find("tokenizing without a cache"), std::string::npos)
      << notes.str();
}

/// This process's peak resident memory, in MiB.
double peakRssMiB() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024;
}

TEST(Dataset, HostMemoryDoesNotGrowWithTheFile) {
  // ~120 MB of token-id lines (~12M tokens): tokenizing holds a few chunks
  // per thread and writes the rest to disk; only the 24-byte sample records
  // and the mapping (not resident until read) remain.
  const std::string dir = freshDir("memory");
  const std::string path = dir + "/big.jsonl";
  {
    std::ofstream out(path);
    std::string line = "{\"input_ids\": [";
    for (int k = 0; k < 2000; ++k)
      line += (k ? "," : "") + std::to_string(100 + k % 800);
    line += "]}\n";
    for (int i = 0; i < 12000; ++i)
      out << line;
  }
  const double before = peakRssMiB();
  TokenizeOptions o = options(2, dir + "/cache");
  std::ostringstream progress;
  o.progress = &progress;
  o.progressIsTerminal = true; // a line rewritten every half second
  const auto start = std::chrono::steady_clock::now();
  auto f = TokenizedFile::open(path, o);
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  EXPECT_EQ(f->tokens(), int64_t(12000) * 2000);
  // Its progress when it took long enough to show it (here ~1 s), then the
  // result on the same line.
  if (seconds > 1.0) {
    EXPECT_NE(progress.str().find("\rtokenizing " + path + ": "),
              std::string::npos)
        << progress.str();
    EXPECT_NE(progress.str().find(" tokens/s, "), std::string::npos);
  }
  EXPECT_NE(progress.str().find("\rtokenized " + path + ": 12,000 samples, "
                                "24,000,000 tokens in "),
            std::string::npos)
      << progress.str();
  const double grown = peakRssMiB() - before;
  // The file's tokens in memory would be 48 MB as int32, 192 MB as the
  // int64 a sample vector held before.
  EXPECT_LT(grown, 40) << "peak RSS grew " << grown << " MiB";
}

TEST(Dataset, TruncationCutsTheMappedSamplesAndCountsWhatStaysTrained) {
  const std::string dir = freshDir("truncation");
  const std::string path = dir + "/data.jsonl";
  std::ofstream(path) << "{\"input_ids\": [1,2,3,4,5,6], \"labels\": "
                         "[-100,-100,-100,-100,5,6]}\n"
                      << "{\"input_ids\": [7,8]}\n";
  auto f = TokenizedFile::open(path, options(1));
  Pieces right = cutToWindows(*f, 4, plan::Truncation::Right);
  ASSERT_EQ(right.kept.size(), 2u);
  EXPECT_EQ(right.truncated, 1);
  EXPECT_EQ(right.kept[0].offset, 0);
  EXPECT_EQ(right.kept[0].length, 4);
  EXPECT_EQ(right.kept[0].trained, 0); // labels 2..4 of the first four
  Pieces left = cutToWindows(*f, 4, plan::Truncation::Left);
  EXPECT_EQ(left.kept[0].offset, 2);
  EXPECT_EQ(left.kept[0].trained, 2); // 5 and 6
  Pieces drop = cutToWindows(*f, 4, plan::Truncation::Drop);
  ASSERT_EQ(drop.kept.size(), 1u);
  EXPECT_EQ(drop.dropped, 1);
  EXPECT_EQ(drop.kept[0].sample, 1);
  try {
    cutToWindows(*f, 4, plan::Truncation::Error);
    FAIL() << "no error";
  } catch (const plan::UserError &e) {
    EXPECT_NE(std::string(e.what()).find("data.jsonl: line 1: a sample of 6 "
                                         "tokens is longer than the window"),
              std::string::npos)
        << e.what();
  }
}

TEST(Dataset, TextLinesThroughTheRealTokenizerAreTheSameAtAnyThreadCount) {
  // Chat, text and alpaca lines through Qwen2.5's tokenizer and template:
  // the tokenizer, the template and the encoder run on many threads at once.
  const std::string dir = freshDir("text");
  const std::string path = dir + "/data.jsonl";
  {
    std::ofstream out(path);
    std::mt19937 rng(7);
    const char *words[] = {"hello", "世界", "мир", "🙂", "naïve", "  ", "12345",
                           "<|im_end|>", "e\\u0301", "\\n", "code()", "مرحبا"};
    auto sentence = [&] {
      std::string s;
      for (int k = 0, n = 3 + int(rng() % 60); k < n; ++k)
        s += std::string(k ? " " : "") + words[rng() % 12];
      return s;
    };
    for (int i = 0; i < 3000; ++i) {
      if (i % 3 == 0)
        out << "{\"text\": \"" << sentence() << "\"}\n";
      else if (i % 3 == 1)
        out << "{\"messages\": [{\"role\": \"user\", \"content\": \""
            << sentence() << "\"}, {\"role\": \"assistant\", \"content\": \""
            << sentence() << "\"}]}\n";
      else
        out << "{\"instruction\": \"" << sentence() << "\", \"output\": \""
            << sentence() << "\"}\n";
    }
  }
  auto open = [&](int threads) {
    TokenizeOptions o;
    o.vocab = 151936;
    o.threads = threads;
    SampleEncoder::fromModelDir(std::string(SWIFT_TOKENIZERS_DIR) + "/qwen2_5", "",
                                151936, true, "model", "")
        .feed(o);
    return TokenizedFile::open(path, o);
  };
  auto one = open(1), many = open(8);
  ASSERT_EQ(one->samples(), 3000);
  ASSERT_EQ(many->samples(), one->samples());
  ASSERT_EQ(many->tokens(), one->tokens());
  for (int64_t s = 0; s < one->samples(); ++s) {
    const SampleInfo a = one->info(s), b = many->info(s);
    ASSERT_EQ(a.length, b.length);
    ASSERT_EQ(a.trained, b.trained);
    std::vector<int64_t> ia(size_t(a.length)), la(ia.size()), ib(ia.size()),
        lb(ia.size());
    one->read(s, 0, a.length, ia.data(), la.data());
    many->read(s, 0, b.length, ib.data(), lb.data());
    ASSERT_EQ(ia, ib) << "sample " << s;
    ASSERT_EQ(la, lb) << "sample " << s;
  }
}

TEST(Dataset, SampleEncoderFingerprintNamesTheTokenizerFilesContent) {
  const std::string dir = freshDir("fingerprint");
  const std::string tokDir = std::string(SWIFT_TOKENIZERS_DIR) + "/qwen2_5";
  fs::copy_file(tokDir + "/tokenizer.json", dir + "/tokenizer.json");
  fs::copy_file(tokDir + "/tokenizer_config.json",
                dir + "/tokenizer_config.json");
  auto fingerprint = [&](bool assistantOnly, const std::string &templ = "") {
    return SampleEncoder::fromModelDir(dir, templ, 151936, assistantOnly,
                                       "model", "")
        .fingerprint();
  };
  const std::string base = fingerprint(true);
  EXPECT_NE(base.find("tokenizer.json "), std::string::npos) << base;
  EXPECT_EQ(fingerprint(true), base);
  EXPECT_NE(fingerprint(false), base); // loss_on all
  std::ofstream(dir + "/t.jinja") << "{{ messages[0].content }}";
  EXPECT_NE(fingerprint(true, dir + "/t.jinja"), base);
  {
    std::ofstream(dir + "/tokenizer_config.json", std::ios::app) << " ";
  }
  EXPECT_NE(fingerprint(true), base); // another template or special token
}

} // namespace
} // namespace swift::data
