//===- SafeTensors.h - streaming safetensors reader and writer -*- C++ -*-===//
//
// The format (huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets":
// [begin, end]}, "__metadata__": {str: str}}, then the data; offsets are
// relative to the end of the header, row-major, little-endian, no gaps
// required. A model directory holds model.safetensors, or shards named in
// model.safetensors.index.json ({"metadata": {"total_size"},
// "weight_map": {name: file}}).
//
// Reading never loads a file: a tensor's elements [first, first+count) are
// read with pread in bounded chunks and converted to fp32, so a rank reads
// exactly the byte range it keeps (its ZeRO-3 shard) and host memory stays
// bounded by the chunk, not the tensor. Writing streams each tensor's bytes
// from a producer into a temporary file that is fsynced and renamed; a
// directory's files appear complete or not at all.
//
// Plain C++ (no LibTorch; part of the torch-free SwiftFormats library that
// the fuzz build links): errors about the files are UserError naming the
// file and the tensor. Only regular files are opened (a FIFO would block);
// headers and index files are read with the strict JSON reader
// (swift/Plan/Json.h: a tensor named twice is refused, not "last one
// wins"); parseHeader and parseIndex check them from memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace swift::rt::safetensors {

enum class DType { F32, F16, BF16, F64, I64, I32, I16, I8, U8, Bool };

/// "F32", "BF16", ...: safetensors' spelling.
const char *toString(DType d);
/// Bytes per element.
int64_t elementSize(DType d);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t dataBegin = 0, dataEnd = 0; // absolute byte offsets in the file
  int64_t numel() const;
};

/// A safetensors header: its tensors, in the header's order, with absolute
/// byte offsets, and its __metadata__ (string values).
struct Header {
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};

/// Parses and checks `json`, the header of the file `path` of `fileSize`
/// bytes (its data start at 8 + json.size()): strict JSON (a name given
/// twice is refused), an object of {"dtype", "shape", "data_offsets"} per
/// tensor with a known dtype, a shape whose element and byte counts fit 64
/// bits (checked without overflow), data_offsets inside the file spanning
/// exactly the shape's bytes, and no two tensors sharing bytes. UserError
/// naming `path` and the tensor otherwise.
Header parseHeader(const std::string &json, int64_t fileSize,
                   const std::string &path);

/// The weight_map of `text`, a model.safetensors.index.json read from
/// `path`: tensor name -> shard file (a plain file name in the index's
/// directory). UserError naming `path` and the entry otherwise.
std::map<std::string, std::string> parseIndex(const std::string &text,
                                              const std::string &path);

/// One .safetensors file, its header parsed and checked against the file
/// size (a truncated file or overlapping tensors is refused at open). Only
/// a regular file is opened.
class File {
public:
  explicit File(const std::string &path);
  ~File();
  File(const File &) = delete;
  File &operator=(const File &) = delete;

  const std::string &path() const { return path_; }
  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// The tensor named `name`, or null.
  const TensorInfo *find(const std::string &name) const;

  /// Elements [first, first + count) of `t` (row-major) as fp32 into `dst`.
  /// F32, F16 and BF16 convert exactly; other dtypes are refused.
  void readF32(const TensorInfo &t, int64_t first, int64_t count,
               float *dst) const;
  /// Bytes [offset, offset + bytes) of `t`'s data, as stored.
  void readBytes(const TensorInfo &t, int64_t offset, int64_t bytes,
                 void *dst) const;

private:
  std::string path_;
  int fd_ = -1;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> byName_;
  std::map<std::string, std::string> metadata_;
};

/// The weights of an HF model directory: model.safetensors, or the shards
/// of model.safetensors.index.json (each opened once). A directory with
/// both is refused: transformers loads the single file, which of the two
/// is stale is the user's to say.
class ModelWeights {
public:
  /// `stem`: the files' name ("model": model.safetensors or
  /// model.safetensors.index.json; peft's "adapter_model").
  explicit ModelWeights(const std::string &dir,
                        const std::string &stem = "model");

  const std::string &dir() const { return dir_; }
  /// Every tensor's name, sorted.
  std::vector<std::string> names() const;
  /// The tensor and the file holding it, or {null, null}.
  std::pair<const TensorInfo *, const File *>
  find(const std::string &name) const;

private:
  std::string dir_;
  std::vector<std::unique_ptr<File>> files_;
  std::map<std::string, std::pair<const TensorInfo *, const File *>> byName_;
};

/// What write() writes of one tensor.
struct TensorSpec {
  std::string name;
  DType dtype = DType::BF16;
  std::vector<int64_t> shape;
  int64_t bytes() const;
};

/// Appends bytes of the tensor being written; called as often as needed.
using ByteSink = std::function<void(const void *data, size_t bytes)>;
/// Produces tensor `index` of write()'s list, in order, through the sink
/// (exactly TensorSpec::bytes() bytes).
using TensorProducer = std::function<void(size_t index, const ByteSink &)>;

/// Writes `tensors` in order into `dir` as HF does: one model.safetensors
/// when the total fits in `maxShardBytes`, otherwise
/// model-00001-of-0000N.safetensors shards of at most `maxShardBytes` each
/// (a larger tensor gets a shard of its own) plus
/// model.safetensors.index.json. Each file is written to a temporary name,
/// fsynced and renamed. `metadata` goes into every header.
/// `stem` names the files ("model"; peft's "adapter_model").
void write(const std::string &dir, const std::vector<TensorSpec> &tensors,
           const TensorProducer &produce, int64_t maxShardBytes,
           const std::map<std::string, std::string> &metadata = {},
           const std::string &stem = "model");

/// fp32 -> bf16 with round-to-nearest-even (as torch's .to(bfloat16)).
uint16_t toBF16(float x);
/// fp32 -> fp16 with round-to-nearest-even (as torch's .to(float16)).
uint16_t toF16(float x);

/// Writes `text` to `path` through a temporary file, fsynced and renamed.
void writeFileAtomically(const std::string &path, const std::string &text);

} // namespace swift::rt::safetensors
