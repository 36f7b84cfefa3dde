// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// safetensors files (the Hugging Face checkpoint format): an 8-byte little-endian header length, a JSON
/// header naming each tensor's dtype, shape and byte range, then the tensors' bytes. Files are memory-mapped
/// and opening one reads only its header; every header field is validated before anything is returned. A
/// sharded checkpoint (model.safetensors.index.json and its shards) is read by Checkpoint.

#include "EigenTypes.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

/// The largest header accepted (as the reference implementation's limit): a real one is a few hundred KB.
inline constexpr std::uint64_t maxSafetensorsHeaderBytes = 100'000'000;

/// One tensor as the header describes it.
struct SafetensorsTensorInfo {
    std::string name;
    /// As in the file: "F32", "BF16", "I64", ... (readable: F64, F32, F16, BF16).
    std::string dtype;
    /// Empty for a scalar.
    std::vector<std::uint64_t> shape;
    /// Its bytes within the data section (which starts after the header): [dataBegin, dataEnd).
    std::uint64_t dataBegin = 0;
    std::uint64_t dataEnd = 0;

    std::uint64_t elementCount() const;
};

/// True for the dtypes readMatrix and readVector convert to double: F64, F32, F16 and BF16.
bool isReadableSafetensorsDtype(const std::string& dtype);

/// An open safetensors file: its header validated, its bytes memory-mapped (read-only, unmapped when the
/// object goes), read one tensor at a time. Movable, not copyable.
///
/// Opening refuses with qkv::Error whose message starts with the file's path and names the tensor and field:
/// a path that is not a regular file (a folder, FIFO or device: refused without opening it for reading), a
/// file shorter than 8 bytes, a header length past the end of the file or above maxSafetensorsHeaderBytes, a
/// header that is not a JSON object, a repeated key, `__metadata__` that is not an object of strings, a
/// tensor without `dtype`, `shape` or `data_offsets`, a dtype the format does not define, a shape that is not
/// a list of whole numbers ≥ 0 (or whose element count overflows), offsets that are not [begin, end] with
/// begin ≤ end ≤ the data section's size, a byte length other than elements × dtype size, and two tensors
/// whose bytes overlap. A dtype the format defines but this reader does not convert (I64, U8, F8_E4M3, ...)
/// is accepted when opening and refused, by name, when that tensor is read.
///
/// The file must not be truncated by another program while it is open (reading a page that is no longer
/// there ends the process with SIGBUS, as with any memory-mapped file).
class SafetensorsFile {
public:
    /// Opens and validates the file at `path`, reading only its length and header.
    static SafetensorsFile open(const std::string& path);
    /// The same validation on bytes in memory (kept by the object); `name` stands for the path in messages.
    static SafetensorsFile fromBytes(std::string bytes, const std::string& name);

    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;
    ~SafetensorsFile();

    /// The path (or name) messages start with.
    const std::string& path() const { return path_; }
    /// Every tensor, sorted by name.
    const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
    /// The header's `__metadata__` (often {"format": "pt"}).
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    bool has(const std::string& name) const;
    /// The tensor's description; throws qkv::Error ("PATH: no tensor "NAME"") when there is none.
    const SafetensorsTensorInfo& info(const std::string& name) const;

    /// A 2-D tensor as doubles (rows × columns as stored). F16 and BF16 convert exactly, subnormals
    /// included. Throws qkv::Error naming the file and tensor: no such tensor, a dtype that is not
    /// converted, another number of dimensions, an infinite or NaN element (its index given), or more
    /// memory than the default memory limit allows.
    Matrix readMatrix(const std::string& name) const;
    /// The same in float32 (for a float32 forward pass): F32, F16 and BF16 exactly, F64 rounded to nearest;
    /// an F64 element beyond float32's range is refused too.
    MatrixF readMatrixFloat32(const std::string& name) const;
    /// readMatrix (Scalar = double) or readMatrixFloat32 (float) into `out`, reusing its storage when it
    /// already has the tensor's size: a forward pass reads every layer's weights into the same buffers
    /// (fresh ones would cost a page fault per 4 KB). After a refusal `out` means nothing.
    template <typename Scalar> void readMatrixInto(const std::string& name, MatrixOf<Scalar>& out) const;
    /// A 2-D F32 tensor where it is stored, without a copy (a float32 forward pass multiplies by it
    /// directly); std::nullopt for any other tensor, or one not aligned for float. Refused as readMatrix
    /// refuses when an element is not finite. Valid while the file is open.
    std::optional<Eigen::Map<const MatrixF>> storedFloat32(const std::string& name) const;
    /// A 1-D tensor as a row of doubles, refused as readMatrix refuses.
    RowVector readVector(const std::string& name) const;
    /// Rows `rows` of a 2-D tensor as doubles, in the order given (an embedding table's rows for a few
    /// tokens, without converting the rest): refused as readMatrix refuses, and a row past the tensor's.
    Matrix readRows(const std::string& name, const std::vector<Index>& rows) const;

private:
    struct Bytes;
    SafetensorsFile(std::unique_ptr<const Bytes> bytes, std::string path);
    void checkMemoryFor(const SafetensorsTensorInfo& tensor) const;
    /// The tensor's flag in finiteTensors_ (`tensor` is one of tensors_).
    std::atomic<bool>& foundFinite(const SafetensorsTensorInfo& tensor) const;
    /// Elements [first, first + count) of the tensor (row-major) into out.
    template <typename Scalar>
    void convert(const SafetensorsTensorInfo& tensor, std::uint64_t first, std::uint64_t count,
                 Scalar* out) const;

    std::unique_ptr<const Bytes> bytes_;
    std::string path_;
    std::uint64_t dataStart_ = 0; // where the data section starts in the file
    std::vector<SafetensorsTensorInfo> tensors_;
    std::map<std::string, std::string> metadata_;
    /// Per tensor (as tensors_): every stored element was found finite (the bytes of an open file do not
    /// change, so each tensor is scanned once).
    std::unique_ptr<std::atomic<bool>[]> finiteTensors_;
};

/// One tensor to write: its values in row-major order, shape product == values.size().
struct SafetensorsTensor {
    std::string name;
    /// "F64", "F32", "F16" or "BF16"; values are rounded to it to nearest, ties to even.
    std::string dtype;
    std::vector<std::uint64_t> shape;
    std::vector<double> values;
};

/// The bytes of a safetensors file holding `tensors` (their data in the order given) and `metadata`, its
/// header padded with spaces to a multiple of 8 bytes as the reference writer pads it. Throws qkv::Error for
/// a repeated or reserved name, another dtype, a shape that does not match the values, or a value that is not
/// finite in its dtype (after rounding).
std::string formatSafetensors(const std::vector<SafetensorsTensor>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

/// formatSafetensors written to `path` by writeFileAtomically.
void writeSafetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// A model's weights in a folder: a single `model.safetensors` or, when there is none,
/// `model.safetensors.index.json` with the shards its `weight_map` names (plain file names in the same
/// folder); a path to one .safetensors file opens that file alone. Every file is opened and validated up
/// front (only headers are read), and every tensor the index names must be in its shard; anything wrong is
/// refused with qkv::Error naming the file, the tensor and the problem, and nothing is kept. Movable, not
/// copyable.
class Checkpoint {
public:
    static Checkpoint open(const std::string& path);

    /// The folder (or file) it was opened from.
    const std::string& path() const { return path_; }
    /// Every tensor's name, sorted.
    std::vector<std::string> tensorNames() const;
    bool has(const std::string& name) const;
    /// Throws qkv::Error naming the checkpoint when the tensor is missing.
    const SafetensorsTensorInfo& info(const std::string& name) const;
    /// As SafetensorsFile's, from the shard holding the tensor.
    Matrix readMatrix(const std::string& name) const;
    MatrixF readMatrixFloat32(const std::string& name) const;
    template <typename Scalar> void readMatrixInto(const std::string& name, MatrixOf<Scalar>& out) const;
    std::optional<Eigen::Map<const MatrixF>> storedFloat32(const std::string& name) const;
    RowVector readVector(const std::string& name) const;
    Matrix readRows(const std::string& name, const std::vector<Index>& rows) const;
    /// The open files (one, or each shard once).
    const std::vector<SafetensorsFile>& files() const { return files_; }

private:
    const SafetensorsFile& fileOf(const std::string& name) const;

    std::string path_;
    std::vector<SafetensorsFile> files_;
    std::map<std::string, std::size_t> fileIndex_; // tensor name → index in files_
};

} // namespace qkv
