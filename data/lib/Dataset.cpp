//===- Dataset.cpp - a JSONL dataset, tokenized once, as windows ----------===//
#include "swift/Data/Dataset.h"

#include "swift/Data/Files.h"
#include "swift/Data/Hash.h"
#include "swift/Plan/Error.h"
#include "swift/Plan/Files.h"
#include "swift/Plan/Json.h"

#include "DataSources.h" // generated: the hash of the data layer's sources

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

namespace swift::data {
using plan::UserError;
namespace fs = std::filesystem;
namespace {

using jsonl::kIgnore;
using Clock = std::chrono::steady_clock;

/// samples.bin: one record per sample, in file order (little-endian).
struct SampleRecord {
  uint64_t start;
  uint32_t length;
  uint32_t trained;
  uint64_t line;
};
static_assert(sizeof(SampleRecord) == 24, "samples.bin's record");

/// ids.u32: one word per token, the id in bits 0-30 and, in bit 31, whether
/// its label is the id (else -100). labels.i32 holds every label instead
/// when some label is neither (token-id lines may say anything).
constexpr uint32_t kTrainedBit = 1u << 31;
constexpr int kFormat = 1;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string bytesText(uint64_t b) {
  char s[32];
  if (b >= (uint64_t(1) << 30))
    std::snprintf(s, sizeof s, "%.2f GB", double(b) / 1e9);
  else
    std::snprintf(s, sizeof s, "%.1f MB", double(b) / 1e6);
  return s;
}

std::string rateText(double perSecond) {
  char s[32];
  if (perSecond >= 1e6)
    std::snprintf(s, sizeof s, "%.2fM", perSecond / 1e6);
  else
    std::snprintf(s, sizeof s, "%.0fk", perSecond / 1e3);
  return s;
}

/// The threads that tokenize by default: $SWIFT_DATA_THREADS, else every
/// CPU this process may run on.
int usableCores() {
  if (const char *env = std::getenv("SWIFT_DATA_THREADS"); env && *env) {
    const int n = std::atoi(env);
    SWIFT_CHECK(n >= 1 && n <= 1024, "SWIFT_DATA_THREADS=", env,
                ": expected a number of threads from 1 to 1024");
    return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

/// A file written through a buffer; every failure (a full disk) is a
/// UserError naming the cache directory.
class OutFile {
public:
  OutFile(const std::string &path, const std::string &what)
      : path_(path), what_(what), f_(std::fopen(path.c_str(), "wbx")) {
    if (!f_)
      fail();
    std::setvbuf(f_, nullptr, _IOFBF, size_t(1) << 20);
  }
  ~OutFile() {
    if (f_)
      std::fclose(f_);
  }
  OutFile(const OutFile &) = delete;
  OutFile &operator=(const OutFile &) = delete;
  void write(const void *p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n)
      fail();
  }
  void flush() {
    if (std::fflush(f_) != 0)
      fail();
  }
  void close() {
    std::FILE *f = f_;
    f_ = nullptr;
    if (std::fflush(f) != 0 || ::fsync(fileno(f)) != 0) {
      const int err = errno;
      std::fclose(f);
      errno = err;
      fail();
    }
    if (std::fclose(f) != 0)
      fail();
  }

private:
  [[noreturn]] void fail() {
    throw UserError(what_ + ": cannot write " + path_ + ": " +
                    std::strerror(errno));
  }
  std::string path_, what_;
  std::FILE *f_;
};

/// A directory removed with everything in it when it goes out of scope,
/// unless released.
class TempDir {
public:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  ~TempDir() {
    if (!path_.empty())
      (void)plan::removeTree(path_);
  }
  const std::string &path() const { return path_; }
  void release() { path_.clear(); }

private:
  std::string path_;
};

void mkdirs(const std::string &dir, const std::string &what) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  SWIFT_CHECK(!ec, what, ": cannot create ", dir, ": ", ec.message());
}

//===-- tokenizing: a reader, workers, and the writer keeping file order ---===//

struct Chunk {
  int64_t index = 0, firstLine = 0;
  std::string text;
  uint64_t endOffset = 0; // file bytes consumed once it is read
};

struct Encoded {
  std::vector<uint32_t> words;
  std::vector<int32_t> labels;
  bool explicitLabels = false;
  std::vector<SampleRecord> records; // starts relative to the chunk
  std::exception_ptr error;          // the chunk's first bad line
  uint64_t endOffset = 0;
};

Encoded encodeChunk(const Chunk &c, const std::string &path,
                    const LineToSample &toSample) {
  Encoded out;
  out.endOffset = c.endOffset;
  try {
    size_t pos = 0;
    std::string line;
    for (int64_t n = c.firstLine; pos < c.text.size(); ++n) {
      size_t nl = c.text.find('\n', pos);
      if (nl == std::string::npos)
        nl = c.text.size();
      line.assign(c.text, pos, nl - pos);
      pos = nl + 1;
      const std::string where = path + ": line " + std::to_string(n);
      std::optional<jsonl::Sample> s = toSample(line, where);
      if (!s)
        continue;
      SWIFT_ASSERT(!s->ids.empty() && s->labels.size() == s->ids.size(),
                   where, ": a sample's ids and labels differ in length");
      SampleRecord r{uint64_t(out.words.size()), uint32_t(s->ids.size()), 0,
                     uint64_t(n)};
      for (size_t k = 0; k < s->ids.size(); ++k) {
        const int32_t id = s->ids[k], label = s->labels[k];
        SWIFT_ASSERT(id >= 0, where, ": a negative token id");
        out.words.push_back(uint32_t(id) | (label == id ? kTrainedBit : 0));
        out.labels.push_back(label);
        out.explicitLabels |= label != id && label != kIgnore;
        r.trained += k > 0 && label != kIgnore;
      }
      out.records.push_back(r);
    }
  } catch (...) {
    out.error = std::current_exception();
  }
  return out;
}

struct Counts {
  int64_t samples = 0, tokens = 0;
  bool explicitLabels = false;
};

/// Prints the progress of one tokenizing.
class Progress {
public:
  Progress(const TokenizeOptions &o, const std::string &path, uint64_t bytes,
           int threads)
      : out_(o.progress), tty_(o.progressIsTerminal), path_(path),
        bytes_(bytes), threads_(threads), start_(Clock::now()),
        last_(start_) {}
  void update(uint64_t done, const Counts &c) {
    if (!out_)
      return;
    const double every = tty_ ? 0.5 : 10.0;
    if (secondsSince(last_) < every)
      return;
    last_ = Clock::now();
    const double t = secondsSince(start_);
    const double left =
        done ? t * double(bytes_ - std::min(done, bytes_)) / double(done) : 0;
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%",
                  bytes_ ? 100.0 * double(done) / double(bytes_) : 100.0);
    *out_ << (tty_ ? "\r" : "") << "tokenizing " << path_ << ": " << pct
          << " of " << bytesText(bytes_) << ", " << groupedDigits(c.samples)
          << " samples, " << rateText(double(c.tokens) / t)
          << " tokens/s, " << int64_t(left + 0.5) << " s left"
          << (tty_ ? "   " : "\n") << std::flush;
    printed_ = true;
  }
  void done(const Counts &c, const std::string &entry) {
    if (!out_)
      return;
    const double t = std::max(secondsSince(start_), 1e-6);
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f s", t);
    *out_ << (tty_ && printed_ ? "\r" : "") << "tokenized " << path_ << ": "
          << groupedDigits(c.samples) << " samples, "
          << groupedDigits(c.tokens) << " tokens in " << secs << " ("
          << rateText(double(c.tokens) / t) << " tokens/s, " << threads_
          << (threads_ == 1 ? " thread" : " threads") << ")"
          << (entry.empty() ? "" : "; cached in " + entry) << "\n"
          << std::flush;
  }

private:
  std::ostream *out_;
  bool tty_;
  std::string path_;
  uint64_t bytes_;
  int threads_;
  Clock::time_point start_, last_;
  bool printed_ = false;
};

/// Tokenizes `path` into directory `dir` (samples.bin, ids.u32 and, when
/// needed, labels.i32), in file order.
Counts tokenizeInto(const std::string &path, const TokenizeOptions &o,
                    const LineToSample &toSample, const std::string &dir,
                    const std::string &what, const std::string &entryName) {
  constexpr size_t kChunkBytes = size_t(1) << 20;
  const int threads = o.threads > 0 ? o.threads : usableCores();
  const int64_t maxInFlight = 3 * int64_t(threads);
  LineReader reader(path);
  struct stat st;
  const uint64_t fileBytes =
      ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;

  std::mutex m;
  std::condition_variable workCv, doneCv, spaceCv;
  std::deque<Chunk> todo;
  std::map<int64_t, Encoded> finished;
  int64_t inFlight = 0, chunks = -1; // chunks: known once the reader ends
  std::exception_ptr readError;
  bool stop = false;

  std::thread readerThread([&] {
    int64_t index = 0;
    try {
      for (;; ++index) {
        {
          std::unique_lock<std::mutex> lock(m);
          spaceCv.wait(lock, [&] { return stop || inFlight < maxInFlight; });
          if (stop)
            break;
        }
        Chunk c;
        c.index = index;
        c.firstLine = reader.number() + 1;
        if (reader.nextLines(c.text, kChunkBytes) == 0)
          break;
        c.endOffset = reader.consumed();
        std::lock_guard<std::mutex> lock(m);
        ++inFlight;
        todo.push_back(std::move(c));
        workCv.notify_one();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(m);
      readError = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(m);
    chunks = index;
    workCv.notify_all();
    doneCv.notify_all();
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (;;) {
        Chunk c;
        {
          std::unique_lock<std::mutex> lock(m);
          workCv.wait(lock,
                      [&] { return stop || !todo.empty() || chunks >= 0; });
          if (stop || todo.empty())
            return;
          c = std::move(todo.front());
          todo.pop_front();
        }
        Encoded e = encodeChunk(c, path, toSample);
        std::lock_guard<std::mutex> lock(m);
        finished.emplace(c.index, std::move(e));
        doneCv.notify_all();
      }
    });
  auto joinAll = [&] {
    {
      std::lock_guard<std::mutex> lock(m);
      stop = true;
    }
    spaceCv.notify_all();
    workCv.notify_all();
    readerThread.join();
    for (std::thread &w : workers)
      w.join();
  };

  Counts counts;
  Progress progress(o, path, fileBytes, threads);
  try {
    OutFile samplesOut(dir + "/samples.bin", what);
    OutFile idsOut(dir + "/ids.u32", what);
    std::unique_ptr<OutFile> labelsOut;
    for (int64_t index = 0;; ++index) {
      Encoded e;
      {
        std::unique_lock<std::mutex> lock(m);
        doneCv.wait(lock, [&] {
          return finished.count(index) || (chunks >= 0 && index >= chunks);
        });
        if (!finished.count(index)) {
          if (readError)
            std::rethrow_exception(readError);
          break;
        }
        e = std::move(finished[index]);
        finished.erase(index);
        --inFlight;
      }
      spaceCv.notify_one();
      if (e.error)
        std::rethrow_exception(e.error);
      if (e.explicitLabels && !labelsOut) {
        // The first label that is neither its id nor -100: every label from
        // now on, and those before from the words already written.
        idsOut.flush();
        labelsOut = std::make_unique<OutFile>(dir + "/labels.i32", what);
        std::ifstream back(dir + "/ids.u32", std::ios::binary);
        std::vector<uint32_t> w(size_t(1) << 16);
        std::vector<int32_t> l(w.size());
        for (int64_t left = counts.tokens; left > 0;) {
          const size_t n = size_t(std::min<int64_t>(left, int64_t(w.size())));
          back.read(reinterpret_cast<char *>(w.data()), std::streamsize(n * 4));
          SWIFT_ASSERT(back.good(), dir, "/ids.u32: cannot read back");
          for (size_t i = 0; i < n; ++i)
            l[i] = w[i] & kTrainedBit ? int32_t(w[i] & ~kTrainedBit) : kIgnore;
          labelsOut->write(l.data(), n * 4);
          left -= int64_t(n);
        }
      }
      for (SampleRecord &r : e.records)
        r.start += uint64_t(counts.tokens);
      samplesOut.write(e.records.data(), e.records.size() * sizeof(SampleRecord));
      idsOut.write(e.words.data(), e.words.size() * 4);
      if (labelsOut)
        labelsOut->write(e.labels.data(), e.labels.size() * 4);
      counts.samples += int64_t(e.records.size());
      counts.tokens += int64_t(e.words.size());
      progress.update(e.endOffset, counts);
      if (o.alive)
        o.alive();
    }
    samplesOut.close();
    idsOut.close();
    if (labelsOut) {
      labelsOut->close();
      counts.explicitLabels = true;
    }
  } catch (...) {
    joinAll();
    throw;
  }
  joinAll();
  progress.done(counts, entryName);
  return counts;
}

//===-- the cache ---------------------------------------------------------===//

/// An exclusive flock on `path`, held while in scope.
class FileLock {
public:
  /// A wait longer than o.waitNoteAfterSeconds is noted: "waiting for
  /// another process `doing`".
  FileLock(const std::string &path, const std::string &what,
           const TokenizeOptions &o, const std::string &doing) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    SWIFT_CHECK(fd_ >= 0, what, ": cannot create ", path, ": ",
                std::strerror(errno));
    const auto start = std::chrono::steady_clock::now();
    bool noted = false;
    for (;;) {
      if (::flock(fd_, LOCK_EX | LOCK_NB) == 0)
        return;
      SWIFT_ASSERT(errno == EWOULDBLOCK || errno == EINTR, path, ": flock: ",
                   std::strerror(errno));
      const std::chrono::duration<double> waited =
          std::chrono::steady_clock::now() - start;
      if (o.notes && !noted && waited.count() >= o.waitNoteAfterSeconds) {
        *o.notes << "waiting for another process " << doing << " (" << path
                 << ")\n"
                 << std::flush;
        noted = true;
      }
      if (o.alive)
        o.alive();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~FileLock() { ::close(fd_); }

private:
  int fd_ = -1;
};

/// The content hash of `path`, remembered in DIR/files by the file's
/// identity (device, inode, size, mtime, ctime): an unchanged file is not
/// read again.
uint64_t contentHash(const std::string &path, const std::string &cacheDir,
                     const TokenizeOptions &o) {
  struct stat st;
  SWIFT_CHECK(::stat(path.c_str(), &st) == 0, path, ": ", std::strerror(errno));
  std::error_code ec;
  const std::string real = fs::canonical(path, ec).string();
  const std::string dir = cacheDir + "/files";
  const std::string memo = dir + "/" + hex64(Hasher().update(real).digest());
  // ctime too: the kernel sets it on every write, and no tool (touch -d,
  // rsync -t) can set it back, as they can mtime.
  char identity[200];
  std::snprintf(identity, sizeof identity, "%llu %llu %lld %lld.%09ld %lld.%09ld",
                (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
                st.st_ctim.tv_nsec);
  auto remembered = [&]() -> std::optional<uint64_t> {
    std::ifstream in(memo);
    std::string seen, hash;
    if (std::getline(in, seen) && std::getline(in, hash) && seen == identity &&
        hash.size() == 16)
      return std::strtoull(hash.c_str(), nullptr, 16);
    return std::nullopt;
  };
  if (std::optional<uint64_t> h = remembered())
    return *h;
  // One process hashes a file at a time (the ranks of a run start
  // together); the others wait and read what it remembered. Best effort:
  // a cache that cannot remember only hashes again.
  fs::create_directories(dir, ec);
  std::unique_ptr<FileLock> lock;
  try {
    lock = std::make_unique<FileLock>(memo + ".lock", "the token cache", o,
                                      "hashing " + path);
  } catch (const UserError &) {
  }
  if (std::optional<uint64_t> h = remembered())
    return *h;
  const uint64_t h = hashFile(path);
  const std::string tmp = memo + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << identity << "\n" << hex64(h) << "\n" << real << "\n";
  }
  fs::rename(tmp, memo, ec);
  if (ec)
    fs::remove(tmp, ec);
  return h;
}

int64_t fileSize(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : -1;
}

/// An entry's counts from its meta.json, when it is complete and its files
/// have the sizes it says; nullopt otherwise (absent, or damaged: built
/// again).
std::optional<Counts> readEntry(const std::string &dir) {
  std::ifstream in(dir + "/meta.json");
  if (!in)
    return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", 0) != kFormat)
    return std::nullopt;
  Counts c;
  c.samples = j.value("samples", int64_t(-1));
  c.tokens = j.value("tokens", int64_t(-1));
  c.explicitLabels = j.value("explicit_labels", false);
  if (c.samples < 0 || c.tokens < 0 ||
      fileSize(dir + "/samples.bin") != c.samples * int64_t(sizeof(SampleRecord)) ||
      fileSize(dir + "/ids.u32") != c.tokens * 4 ||
      (c.explicitLabels && fileSize(dir + "/labels.i32") != c.tokens * 4))
    return std::nullopt;
  return c;
}

void writeMeta(const std::string &dir, const std::string &path,
               const TokenizeOptions &o, uint64_t dataHash, const Counts &c,
               double seconds, const std::string &what) {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["data"] = path;
  j["data_bytes"] = fileSize(path);
  j["data_hash"] = hex64(dataHash);
  j["samples_from"] = o.key;
  j["data_layer"] = kDataSourcesHash;
  j["samples"] = c.samples;
  j["tokens"] = c.tokens;
  j["explicit_labels"] = c.explicitLabels;
  j["seconds"] = seconds;
  const std::string text =
      j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
      "\n";
  OutFile out(dir + "/meta.json", what);
  out.write(text.data(), text.size());
  out.close();
}

void *mapFile(const std::string &path, size_t bytes) {
  if (bytes == 0)
    return nullptr;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  SWIFT_CHECK(fd >= 0, path, ": ", std::strerror(errno));
  void *p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  SWIFT_ASSERT(p != MAP_FAILED, path, ": mmap: ", std::strerror(errno));
  return p;
}

} // namespace

//===-- TokenizedFile ------------------------------------------------------===//

struct TokenizedFile::Mapping {
  const SampleRecord *samples = nullptr;
  const uint32_t *words = nullptr;
  const int32_t *labels = nullptr; // null: from the words' trained bit
  size_t samplesBytes = 0, tokenBytes = 0;
  /// Uncached: the temporary directory of the mapped files, removed once
  /// they are unmapped (never while mapped: on some filesystems a page of
  /// an unlinked file cannot be read back).
  std::unique_ptr<TempDir> temporary;
  ~Mapping() {
    if (samples)
      ::munmap(const_cast<SampleRecord *>(samples), samplesBytes);
    if (words)
      ::munmap(const_cast<uint32_t *>(words), tokenBytes);
    if (labels)
      ::munmap(const_cast<int32_t *>(labels), tokenBytes);
  }
};

TokenizedFile::~TokenizedFile() = default;

std::shared_ptr<const TokenizedFile>
TokenizedFile::open(const std::string &path, const TokenizeOptions &o) {
  // A FIFO or a directory is refused before anything waits on it.
  ::close(openRegularFile(path, "a JSON Lines file"));
  const LineToSample toSample =
      o.lineToSample ? o.lineToSample : tokenIdsLines(o.vocab);
  const std::string key =
      o.lineToSample ? o.key : "token ids below " + std::to_string(o.vocab);
  const bool cached = !o.cacheDir.empty() && !key.empty();
  const std::string what =
      cached ? "the token cache " + o.cacheDir +
                   " (--data-cache DIR puts it elsewhere)"
             : "the temporary directory of " + path + "'s tokens";

  std::shared_ptr<TokenizedFile> f(new TokenizedFile());
  f->path_ = path;
  auto map = [&](const std::string &dir, const Counts &c) {
    f->samples_ = c.samples;
    f->tokens_ = c.tokens;
    f->map_ = std::make_unique<Mapping>();
    Mapping &mp = *f->map_;
    mp.samplesBytes = size_t(c.samples) * sizeof(SampleRecord);
    mp.tokenBytes = size_t(c.tokens) * 4;
    mp.samples = static_cast<const SampleRecord *>(
        mapFile(dir + "/samples.bin", mp.samplesBytes));
    mp.words = static_cast<const uint32_t *>(
        mapFile(dir + "/ids.u32", mp.tokenBytes));
    if (c.explicitLabels)
      mp.labels = static_cast<const int32_t *>(
          mapFile(dir + "/labels.i32", mp.tokenBytes));
  };

  auto uncached = [&](const std::string &what) {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/swift-tokens.XXXXXX";
    SWIFT_CHECK(::mkdtemp(pattern.data()), what, ": cannot create ", pattern,
                ": ", std::strerror(errno));
    auto dir = std::make_unique<TempDir>(pattern);
    map(dir->path(), tokenizeInto(path, o, toSample, dir->path(), what, ""));
    f->map_->temporary = std::move(dir);
    return f;
  };
  if (!cached)
    return uncached(what);

  const uint64_t dataHash = contentHash(path, o.cacheDir, o);
  Hasher k;
  k.update("swift token cache " + std::to_string(kFormat) + "\n")
      .update(std::string(kDataSourcesHash) + "\n")
      .update(hex64(dataHash) + " " + std::to_string(fileSize(path)) + "\n")
      .update(key);
  const std::string tokens = o.cacheDir + "/tokens";
  const std::string entry = tokens + "/" + hex64(k.digest());
  f->entry_ = entry;
  // A reused entry's records are checked before any is read: an entry
  // damaged in a way its sizes do not show is built again.
  auto consistent = [&] {
    const Mapping &mp = *f->map_;
    uint64_t next = 0;
    for (int64_t i = 0; i < f->samples_; ++i) {
      const SampleRecord &r = mp.samples[i];
      if (r.start != next || r.length == 0 || r.trained >= r.length)
        return false;
      next += r.length;
    }
    return next == uint64_t(f->tokens_);
  };
  if (std::optional<Counts> c = readEntry(entry)) {
    f->reused_ = true;
    map(entry, *c);
  }
  if (f->reused_ && !consistent()) {
    f->reused_ = false;
    f->map_.reset();
  }
  if (f->reused_) {
    if (o.notes)
      *o.notes << path << ": " << groupedDigits(f->samples_) << " samples, "
               << groupedDigits(f->tokens_) << " tokens from the token cache "
               << entry << "\n"
               << std::flush;
    return f;
  }
  // A cache directory that cannot be made (a read-only home) costs the
  // cache, not the run.
  std::unique_ptr<FileLock> lock;
  try {
    mkdirs(tokens, what);
    lock = std::make_unique<FileLock>(entry + ".lock", what, o, "tokenizing " + path);
  } catch (const UserError &e) {
    if (o.notes)
      *o.notes << "warning: " << e.what() << "; tokenizing without a cache\n";
    f->entry_.clear();
    return uncached("the temporary directory of " + path + "'s tokens");
  }
  if (std::optional<Counts> c = readEntry(entry)) { // built while we waited
    f->reused_ = true;
    map(entry, *c);
    if (consistent())
      return f;
    f->reused_ = false;
    f->map_.reset();
  }
  (void)plan::removeTree(entry); // a damaged entry
  // What a builder of this key left when it was killed (the lock is ours,
  // so no other builder is at work on it).
  const std::string stale = fs::path(entry).filename().string() + ".tmp.";
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(tokens, ec))
    if (e.path().filename().string().rfind(stale, 0) == 0)
      (void)plan::removeTree(e.path().string());
  TempDir dir(entry + ".tmp." + std::to_string(::getpid()));
  mkdirs(dir.path(), what);
  const auto start = Clock::now();
  const Counts c = tokenizeInto(path, o, toSample, dir.path(), what, entry);
  writeMeta(dir.path(), path, o, dataHash, c, secondsSince(start), what);
  fs::rename(dir.path(), entry, ec);
  SWIFT_CHECK(!ec, what, ": cannot rename ", dir.path(), " to ", entry, ": ",
              ec.message());
  dir.release();
  map(entry, c);
  return f;
}

SampleInfo TokenizedFile::info(int64_t sample) const {
  SWIFT_ASSERT(sample >= 0 && sample < samples_, "sample ", sample, " of ",
               samples_);
  const SampleRecord &r = map_->samples[sample];
  return {int64_t(r.start), int64_t(r.length), int64_t(r.trained),
          int64_t(r.line)};
}

void TokenizedFile::read(int64_t sample, int64_t from, int64_t n, int64_t *ids,
                         int64_t *labels) const {
  const SampleRecord &r = map_->samples[sample];
  SWIFT_ASSERT(from >= 0 && n >= 0 && from + n <= int64_t(r.length),
               "tokens ", from, "+", n, " of a sample of ", r.length);
  const uint32_t *w = map_->words + r.start + from;
  for (int64_t k = 0; k < n; ++k)
    ids[k] = int64_t(w[k] & ~kTrainedBit);
  if (!labels)
    return;
  if (map_->labels) {
    const int32_t *l = map_->labels + r.start + from;
    for (int64_t k = 0; k < n; ++k)
      labels[k] = l[k];
  } else {
    for (int64_t k = 0; k < n; ++k)
      labels[k] = w[k] & kTrainedBit ? int64_t(w[k] & ~kTrainedBit) : kIgnore;
  }
}

int64_t TokenizedFile::trainedIn(int64_t sample, int64_t from, int64_t n) const {
  const SampleRecord &r = map_->samples[sample];
  int64_t trained = 0;
  for (int64_t k = from + 1; k < from + n; ++k)
    trained += map_->labels ? map_->labels[r.start + k] != kIgnore
                            : (map_->words[r.start + k] & kTrainedBit) != 0;
  return trained;
}

//===-- truncation, windows, the summary -----------------------------------===//

std::optional<Cut> cutToWindow(int64_t length, int64_t seq,
                               plan::Truncation truncation,
                               const std::string &where) {
  if (length <= seq)
    return Cut{0, length, false};
  switch (truncation) {
  case plan::Truncation::Drop:
    return std::nullopt;
  case plan::Truncation::Error:
    SWIFT_CHECK(false, where, ": a sample of ", length,
                " tokens is longer than the window (training.sequence_length ",
                seq,
                "); training.truncation error refuses it (drop, right "
                "or left keep the run going)");
    return std::nullopt;
  case plan::Truncation::Right:
    return Cut{0, seq, true};
  case plan::Truncation::Left:
    return Cut{length - seq, seq, true};
  }
  return std::nullopt;
}

Pieces cutToWindows(const TokenizedFile &file, int64_t seq,
                    plan::Truncation truncation) {
  Pieces out;
  out.kept.reserve(size_t(file.samples()));
  for (int64_t s = 0; s < file.samples(); ++s) {
    const SampleInfo i = file.info(s);
    std::optional<Cut> c = cutToWindow(
        i.length, seq, truncation,
        i.length > seq ? file.path() + ": line " + std::to_string(i.line)
                       : std::string());
    if (!c) {
      ++out.dropped;
      continue;
    }
    out.truncated += c->cut;
    out.kept.push_back({s, c->offset, c->length,
                        c->cut ? file.trainedIn(s, c->offset, c->length)
                               : i.trained});
  }
  return out;
}

WindowLayout layOutWindows(const std::vector<int64_t> &lengths,
                           const std::vector<int64_t> &trained, int64_t seq,
                           bool packing) {
  // Each sample's window, then the windows in the order of their first
  // sample and each window's samples in order: 8 bytes a sample and 40 a
  // window, whatever the file's size.
  const size_t n = lengths.size();
  std::vector<int64_t> windowOf(n);
  int64_t windows = 0;
  if (!packing) {
    for (size_t s = 0; s < n; ++s)
      windowOf[s] = windows++;
  } else {
    std::vector<int64_t> order(n);
    for (size_t s = 0; s < n; ++s)
      order[s] = int64_t(s);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return lengths[size_t(a)] > lengths[size_t(b)];
    });
    std::multimap<int64_t, int64_t> room; // free positions -> window
    for (int64_t s : order) {
      const int64_t len = lengths[size_t(s)];
      auto it = room.lower_bound(len);
      int64_t w, free;
      if (it == room.end()) {
        w = windows++;
        free = seq;
      } else {
        w = it->second;
        free = it->first;
        room.erase(it);
      }
      windowOf[size_t(s)] = w;
      if (free - len > 0)
        room.emplace(free - len, w);
    }
  }
  std::vector<int64_t> rank(size_t(windows), -1);
  int64_t ranked = 0;
  for (size_t s = 0; s < n; ++s)
    if (rank[size_t(windowOf[s])] < 0)
      rank[size_t(windowOf[s])] = ranked++;
  WindowLayout out;
  out.windows.resize(size_t(windows));
  for (size_t s = 0; s < n; ++s) {
    Window &w = out.windows[size_t(rank[size_t(windowOf[s])])];
    ++w.count;
    w.used += lengths[s];
    w.trained += trained[s];
  }
  int64_t first = 0;
  for (Window &w : out.windows) {
    w.first = first;
    first += w.count;
  }
  std::vector<int64_t> filled(size_t(windows), 0);
  out.order.resize(n);
  for (size_t s = 0; s < n; ++s) {
    const size_t r = size_t(rank[size_t(windowOf[s])]);
    out.order[size_t(out.windows[r].first + filled[r]++)] = int64_t(s);
  }
  return out;
}

std::string groupedDigits(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

LineToSample tokenIdsLines(int64_t vocab) {
  return [vocab](const std::string &line, const std::string &where) {
    return jsonl::parseLine(line, vocab, where);
  };
}

double DataSummary::packingEfficiency() const {
  return windows ? double(tokens) / double(windows * seq) : 0;
}

std::string DataSummary::line() const {
  std::string out = path + ": " + groupedDigits(samples) + " samples, " +
                    groupedDigits(tokens) + " tokens";
  if (dropped || truncated)
    out += " (" + groupedDigits(dropped) + " dropped, " +
           groupedDigits(truncated) +
           " truncated: longer than sequence_length " + std::to_string(seq) +
           ")";
  if (heldOut)
    out += ", " + groupedDigits(heldOut) + " held out for evaluation";
  char eff[32];
  std::snprintf(eff, sizeof eff, "%.1f%%", 100 * packingEfficiency());
  out += ", " + groupedDigits(windows) + " windows of " + std::to_string(seq) +
         " (packing efficiency " + eff + "), " + groupedDigits(trained) +
         " trained tokens";
  return out;
}

std::string defaultCacheDir() {
  if (const char *d = std::getenv("SWIFT_CACHE_DIR"); d && *d)
    return d;
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return std::string(d) + "/swift";
  if (const char *d = std::getenv("HOME"); d && *d)
    return std::string(d) + "/.cache/swift";
  return "";
}

//===-- LineReader ---------------------------------------------------------===//

LineReader::LineReader(const std::string &path)
    : path_(path), fd_(openRegularFile(path, "a JSON Lines file")) {}

LineReader::~LineReader() { ::close(fd_); }

bool LineReader::fill() {
  // Only the unread part is kept: moved to the front once per chunk.
  buffer_.erase(0, begin_);
  scanned_ -= begin_;
  begin_ = 0;
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    SWIFT_CHECK(n >= 0, path_, ": read failed: ", std::strerror(errno));
    if (n == 0)
      eof_ = true;
    buffer_.append(chunk, size_t(n));
    return n > 0;
  }
}

bool LineReader::next(std::string &line) {
  for (;;) {
    if (size_t nl = buffer_.find('\n', scanned_); nl != std::string::npos) {
      line.assign(buffer_, begin_, nl - begin_);
      consumed_ += nl + 1 - begin_;
      begin_ = scanned_ = nl + 1;
      ++number_;
      return true;
    }
    scanned_ = buffer_.size();
    SWIFT_CHECK(buffer_.size() - begin_ <= kMaxLineBytes, path_, ": line ",
                number_ + 1, " is longer than ", kMaxLineBytes >> 20,
                " MiB (a JSON Lines file holds one sample a line)");
    if (eof_) {
      if (begin_ == buffer_.size())
        return false;
      line.assign(buffer_, begin_, std::string::npos);
      consumed_ += buffer_.size() - begin_;
      begin_ = scanned_ = buffer_.size();
      ++number_;
      return true;
    }
    fill();
  }
}

int64_t LineReader::nextLines(std::string &text, size_t bytes) {
  int64_t lines = 0;
  std::string line;
  while (text.size() < bytes && next(line)) {
    text += line;
    text += '\n';
    ++lines;
  }
  return lines;
}

} // namespace swift::data
