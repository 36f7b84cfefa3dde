// SPDX-License-Identifier: GPL-3.0-or-later
#include "Safetensors.h"

#include "Error.h"
#include "FileReading.h"
#include "FileWriting.h"
#include "JsonText.h"
#include "Parallel.h"
#include "QuotedExcerpt.h"
#include "ResourceLimits.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// The format is little-endian; tensors are copied out byte for byte into native numbers.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the safetensors reader assumes a little-endian CPU");

namespace qkv {

using json::Json;

namespace {

constexpr std::uint64_t lengthBytes = 8;
/// The header nests three levels (the object, a tensor's entry, its shape) and a shape has few dimensions:
/// anything beyond is refused while parsing, before it could build a large tree.
constexpr json::JsonLimits headerLimits{3, 64};
/// An index lists one file name per tensor: a few hundred KB for the largest models.
constexpr std::uint64_t maxIndexBytes = 64ull << 20;
const std::string indexFileName = "model.safetensors.index.json";
const std::string singleFileName = "model.safetensors";

struct DtypeSize {
    const char* name;
    unsigned bytes;
};
// Every dtype of the format with a whole number of bytes per element; sub-byte ones (F4, F6) are refused.
constexpr DtypeSize dtypeSizes[] = {
    {"F64", 8},  {"F32", 4}, {"F16", 2},     {"BF16", 2},    {"I64", 8},     {"I32", 4},
    {"I16", 2},  {"I8", 1},  {"U64", 8},     {"U32", 4},     {"U16", 2},     {"U8", 1},
    {"BOOL", 1}, {"C64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1},
};

std::optional<unsigned> dtypeSize(const std::string& dtype)
{
    for (const DtypeSize& d : dtypeSizes)
        if (dtype == d.name)
            return d.bytes;
    return std::nullopt;
}

std::string tensorLabel(const std::string& name)
{
    return "tensor " + quotedExcerpt(name, 200);
}

std::string shapeText(const std::vector<std::uint64_t>& shape)
{
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

/// A JSON whole number ≥ 0 (nlohmann keeps those as unsigned; negatives and fractions are other types).
std::optional<std::uint64_t> wholeNumber(const Json& value)
{
    if (value.is_number_unsigned())
        return value.get<std::uint64_t>();
    return std::nullopt;
}

/// An F16's value: exact in a double, subnormals included (±inf and NaN too; the caller refuses those).
double halfToDouble(std::uint16_t bits)
{
    const int exponent = (bits >> 10) & 0x1F;
    const int fraction = bits & 0x3FF;
    double magnitude = 0.0;
    if (exponent == 0)
        magnitude = std::ldexp(fraction, -24);
    else if (exponent == 0x1F)
        magnitude = fraction == 0 ? std::numeric_limits<double>::infinity()
                                  : std::numeric_limits<double>::quiet_NaN();
    else
        magnitude = std::ldexp(fraction + 1024, exponent - 25);
    return (bits & 0x8000) != 0 ? -magnitude : magnitude;
}

/// A BF16 is the upper half of an F32.
double bfloat16ToDouble(std::uint16_t bits)
{
    const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
    float value = 0.0f;
    std::memcpy(&value, &wide, sizeof value);
    return value;
}

template <typename Stored, typename Out, typename ToDouble>
void convertElements(const unsigned char* in, std::uint64_t count, Out* out, ToDouble toDouble)
{
    for (std::uint64_t i = 0; i < count; ++i) {
        Stored stored;
        std::memcpy(&stored, in + i * sizeof(Stored), sizeof(Stored)); // tensors need not be aligned
        out[i] = static_cast<Out>(toDouble(stored)); // to float32: exact but from F64 (rounded to nearest)
    }
}

/// Element `flat` of a row-major tensor of `shape` as an index "[i, j, ...]".
std::string elementIndex(std::uint64_t flat, const std::vector<std::uint64_t>& shape)
{
    std::vector<std::uint64_t> index(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        index[d] = flat % shape[d];
        flat /= shape[d];
    }
    return shapeText(index);
}

std::string joinPath(const std::string& folder, const std::string& name)
{
    return !folder.empty() && folder.back() == '/' ? folder + name : folder + "/" + name;
}

/// A shard name from an index: a file in the index's own folder, never a path that leaves it.
bool isPlainFileName(const std::string& name)
{
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

} // namespace

std::uint64_t SafetensorsTensorInfo::elementCount() const
{
    std::uint64_t count = 1;
    for (std::uint64_t d : shape)
        count *= d; // cannot overflow: the header's validation checked it
    return count;
}

bool isReadableSafetensorsDtype(const std::string& dtype)
{
    return dtype == "F64" || dtype == "F32" || dtype == "F16" || dtype == "BF16";
}

/// The file's bytes: a read-only mapping, or bytes held in memory (fromBytes).
struct SafetensorsFile::Bytes {
    const unsigned char* data = nullptr;
    std::uint64_t size = 0;
    void* mapping = nullptr;
    std::string owned;

    Bytes() = default;
    Bytes(const Bytes&) = delete;
    Bytes& operator=(const Bytes&) = delete;
    ~Bytes()
    {
        if (mapping != nullptr)
            ::munmap(mapping, static_cast<std::size_t>(size));
    }
};

namespace {

[[noreturn]] void refuseFile(const std::string& path, const std::string& problem)
{
    throw Error(path + ": " + problem);
}

/// The 8-byte little-endian header length a file starts with, checked against the file's size.
std::uint64_t headerLengthOf(const unsigned char* data, std::uint64_t size, const std::string& path)
{
    if (size == 0)
        refuseFile(path, "the file is empty (a safetensors file starts with an 8-byte header length)");
    if (size < lengthBytes)
        refuseFile(path, "the file has only " + std::to_string(size) +
                             " bytes, too short for the 8-byte header length a safetensors file starts with");
    std::uint64_t headerLength = 0;
    for (std::uint64_t i = 0; i < lengthBytes; ++i)
        headerLength |= static_cast<std::uint64_t>(data[i]) << (8 * i);
    if (headerLength > maxSafetensorsHeaderBytes)
        refuseFile(path, "the header length " + std::to_string(headerLength) +
                             " is larger than the limit of " + formatBytes(maxSafetensorsHeaderBytes) +
                             " (not a safetensors file, or a damaged one)");
    if (headerLength > size - lengthBytes)
        refuseFile(path, "the header length " + std::to_string(headerLength) +
                             " runs past the end of the file (" + std::to_string(size - lengthBytes) +
                             " bytes follow the length)");
    return headerLength;
}

/// The header's JSON: an object with one entry per tensor.
Json parseHeader(const unsigned char* data, std::uint64_t headerLength, const std::string& path)
{
    Json header;
    try {
        header = json::parseJsonStrictly(
            std::string_view(reinterpret_cast<const char*>(data + lengthBytes), headerLength), headerLimits);
    } catch (const Error& e) {
        refuseFile(path, std::string("header: ") + e.what());
    } catch (const std::bad_alloc&) {
        refuseFile(path, "not enough memory to read the header (" + formatBytes(headerLength) + ")");
    }
    if (!header.is_object())
        refuseFile(path, "header: expected a JSON object with one entry per tensor");
    return header;
}

/// `__metadata__`: an object of strings.
std::map<std::string, std::string> readMetadata(const Json& entry, const std::string& path)
{
    if (!entry.is_object())
        refuseFile(path, "header: __metadata__: expected an object of strings");
    std::map<std::string, std::string> metadata;
    for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string())
            refuseFile(path, "header: __metadata__: " + quotedExcerpt(m.key(), 100) + ": expected a string");
        metadata[m.key()] = m.value().get<std::string>();
    }
    return metadata;
}

/// One tensor's header entry: a dtype this reader knows, a shape and data offsets inside the data section
/// (`dataSize` bytes) that hold exactly the shape's elements.
SafetensorsTensorInfo readTensorEntry(const std::string& name, const Json& entry, std::uint64_t dataSize,
                                      const std::string& path)
{
    const std::string label = tensorLabel(name);
    const auto refuseTensor = [&](const std::string& problem) { refuseFile(path, label + ": " + problem); };
    if (!entry.is_object())
        refuseTensor("expected an object with dtype, shape and data_offsets");
    for (const char* key : {"dtype", "shape", "data_offsets"})
        if (!entry.contains(key))
            refuseTensor(std::string("no ") + key);

    SafetensorsTensorInfo tensor;
    tensor.name = name;
    const Json& dtype = entry["dtype"];
    if (!dtype.is_string())
        refuseTensor("dtype: expected a string such as \"F32\"");
    tensor.dtype = dtype.get<std::string>();
    const std::optional<unsigned> elementBytes = dtypeSize(tensor.dtype);
    if (!elementBytes)
        refuseTensor("dtype " + quotedExcerpt(tensor.dtype) +
                     " is not a safetensors dtype this reader knows");

    const Json& shape = entry["shape"];
    if (!shape.is_array())
        refuseTensor("shape: expected a list of dimensions");
    std::uint64_t count = 1;
    bool overflow = false;
    for (const Json& dimension : shape) {
        const std::optional<std::uint64_t> d = wholeNumber(dimension);
        if (!d || *d > static_cast<std::uint64_t>(std::numeric_limits<Index>::max()))
            refuseTensor("shape: " + quotedExcerpt(dimension.dump()) +
                         " is not a dimension (a whole number ≥ 0)");
        tensor.shape.push_back(*d);
        overflow = overflow || __builtin_mul_overflow(count, *d, &count);
    }

    const Json& offsets = entry["data_offsets"];
    std::optional<std::uint64_t> begin, end;
    if (offsets.is_array() && offsets.size() == 2) {
        begin = wholeNumber(offsets[0]);
        end = wholeNumber(offsets[1]);
    }
    if (!begin || !end)
        refuseTensor("data_offsets: expected [begin, end], two whole numbers ≥ 0");
    const std::string range = "data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) + "]";
    if (*end < *begin)
        refuseTensor(range + " end before begin");
    if (*end > dataSize)
        refuseTensor(range + " run past the data section (" + std::to_string(dataSize) + " bytes)");
    tensor.dataBegin = *begin;
    tensor.dataEnd = *end;

    std::uint64_t needed = 0;
    overflow = overflow || __builtin_mul_overflow(count, *elementBytes, &needed);
    if (overflow)
        refuseTensor("shape " + shapeText(tensor.shape) + " has more elements than any file can hold");
    if (needed != *end - *begin)
        refuseTensor("shape " + shapeText(tensor.shape) + " of " + tensor.dtype + " needs " +
                     std::to_string(needed) + " bytes, but " + range + " hold " +
                     std::to_string(*end - *begin));
    return tensor;
}

/// No byte may belong to two tensors (an empty tensor holds none).
void checkNoOverlap(const std::vector<SafetensorsTensorInfo>& tensors, const std::string& path)
{
    std::vector<const SafetensorsTensorInfo*> byOffset;
    for (const SafetensorsTensorInfo& t : tensors)
        if (t.dataEnd > t.dataBegin)
            byOffset.push_back(&t);
    std::sort(byOffset.begin(), byOffset.end(),
              [](const auto* a, const auto* b) { return a->dataBegin < b->dataBegin; });
    for (std::size_t i = 1; i < byOffset.size(); ++i)
        if (byOffset[i]->dataBegin < byOffset[i - 1]->dataEnd)
            refuseFile(path, tensorLabel(byOffset[i - 1]->name) + " and " + tensorLabel(byOffset[i]->name) +
                                 " overlap: their data_offsets share bytes " +
                                 std::to_string(byOffset[i]->dataBegin) + " to " +
                                 std::to_string(std::min(byOffset[i]->dataEnd, byOffset[i - 1]->dataEnd)));
}

} // namespace

SafetensorsFile::SafetensorsFile(std::unique_ptr<const Bytes> bytes, std::string path)
    : bytes_(std::move(bytes)), path_(std::move(path))
{
    const std::uint64_t headerLength = headerLengthOf(bytes_->data, bytes_->size, path_);
    dataStart_ = lengthBytes + headerLength;
    const std::uint64_t dataSize = bytes_->size - dataStart_;
    const Json header = parseHeader(bytes_->data, headerLength, path_);
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__")
            metadata_ = readMetadata(it.value(), path_);
        else
            tensors_.push_back(readTensorEntry(it.key(), it.value(), dataSize, path_));
    }
    checkNoOverlap(tensors_, path_);
    std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    finiteTensors_ = std::make_unique<std::atomic<bool>[]>(tensors_.size());
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

SafetensorsFile SafetensorsFile::open(const std::string& path)
{
    std::uint64_t size = 0;
    const int fd = openRegularFile(path, size);
    auto bytes = std::make_unique<Bytes>();
    bytes->size = size;
    if (size > 0) {
        // Mapped, not read: only the pages of the header are touched now, each tensor's when it is read.
        void* mapping = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
        const int error = errno;
        ::close(fd); // the mapping keeps the file
        if (mapping == MAP_FAILED)
            throw Error(path + ": cannot map the file into memory: " + std::strerror(error));
        bytes->mapping = mapping;
        bytes->data = static_cast<const unsigned char*>(mapping);
    } else {
        ::close(fd);
    }
    return SafetensorsFile(std::move(bytes), path);
}

SafetensorsFile SafetensorsFile::fromBytes(std::string bytes, const std::string& name)
{
    auto held = std::make_unique<Bytes>();
    held->owned = std::move(bytes);
    held->data = reinterpret_cast<const unsigned char*>(held->owned.data());
    held->size = held->owned.size();
    return SafetensorsFile(std::move(held), name);
}

bool SafetensorsFile::has(const std::string& name) const
{
    const auto it =
        std::lower_bound(tensors_.begin(), tensors_.end(), name,
                         [](const SafetensorsTensorInfo& t, const std::string& n) { return t.name < n; });
    return it != tensors_.end() && it->name == name;
}

const SafetensorsTensorInfo& SafetensorsFile::info(const std::string& name) const
{
    const auto it =
        std::lower_bound(tensors_.begin(), tensors_.end(), name,
                         [](const SafetensorsTensorInfo& t, const std::string& n) { return t.name < n; });
    if (it == tensors_.end() || it->name != name)
        throw Error(path_ + ": no " + tensorLabel(name));
    return *it;
}

template <typename Scalar>
void SafetensorsFile::convert(const SafetensorsTensorInfo& tensor, std::uint64_t first, std::uint64_t count,
                              Scalar* out) const
{
    const std::string label = path_ + ": " + tensorLabel(tensor.name);
    if (!isReadableSafetensorsDtype(tensor.dtype))
        throw Error(label + ": dtype " + tensor.dtype + " cannot be read (only F64, F32, F16 and BF16)");
    const unsigned char* in = bytes_->data + dataStart_ + tensor.dataBegin;
    const std::size_t size = tensor.dtype == "F64" ? 8 : tensor.dtype == "F32" ? 4 : 2;
    // A layer's weights are millions of elements: the engine's threads convert them in chunks (the pages
    // of a memory-mapped file are read in parallel too).
    constexpr Index grain = Index{1} << 18;
    parallelFor(static_cast<Index>(count), grain, [&](Index begin, Index end) {
        const unsigned char* from = in + (first + static_cast<std::uint64_t>(begin)) * size;
        const auto length = static_cast<std::uint64_t>(end - begin);
        Scalar* to = out + begin;
        if (tensor.dtype == "F64")
            convertElements<double>(from, length, to, [](double x) { return x; });
        else if (tensor.dtype == "F32")
            convertElements<float>(from, length, to, [](float x) { return static_cast<double>(x); });
        else if (tensor.dtype == "F16")
            convertElements<std::uint16_t>(from, length, to, halfToDouble);
        else
            convertElements<std::uint16_t>(from, length, to, bfloat16ToDouble);
    });
    // The scan is skipped for a tensor already found finite (the bytes do not change, and the scan is a pass
    // over every weight of every forward pass), unless float32 could overflow where the stored F64 did not.
    std::atomic<bool>& knownFinite = foundFinite(tensor);
    if (knownFinite.load(std::memory_order_acquire) &&
        !(std::is_same_v<Scalar, float> && tensor.dtype == "F64"))
        return;
    const Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>> values(out, static_cast<Index>(count));
    if (isAllFinite(values)) {
        if (first == 0 && count == tensor.elementCount())
            knownFinite.store(true, std::memory_order_release);
    } else {
        std::uint64_t i = 0;
        while (std::isfinite(out[i]))
            ++i;
        double stored = 0.0; // an F64 element that float32 cannot hold is finite in the file
        if (tensor.dtype == "F64")
            std::memcpy(&stored, in + (first + i) * 8, 8);
        if (tensor.dtype == "F64" && std::isfinite(stored))
            throw Error(label + ": element " + elementIndex(first + i, tensor.shape) +
                        " is beyond float32's range; choose precision float64");
        throw Error(label + ": element " + elementIndex(first + i, tensor.shape) + " is " +
                    (std::isnan(out[i]) ? "NaN" : "infinite") + " (weights must be finite numbers)");
    }
}

std::atomic<bool>& SafetensorsFile::foundFinite(const SafetensorsTensorInfo& tensor) const
{
    return finiteTensors_[std::size_t(&tensor - tensors_.data())];
}

void SafetensorsFile::checkMemoryFor(const SafetensorsTensorInfo& tensor) const
{
    // A tensor of F16 or BF16 takes four times its file size as doubles (and a sparse file can be huge).
    if (tensor.elementCount() > defaultMemoryLimit() / sizeof(double))
        throw Error(path_ + ": " + tensorLabel(tensor.name) + " needs " +
                    formatBytes(tensor.elementCount() * sizeof(double)) +
                    " as float64, more than the memory limit of " + formatBytes(defaultMemoryLimit()));
}

Matrix SafetensorsFile::readMatrix(const std::string& name) const
{
    Matrix m;
    readMatrixInto(name, m);
    return m;
}

MatrixF SafetensorsFile::readMatrixFloat32(const std::string& name) const
{
    MatrixF m;
    readMatrixInto(name, m);
    return m;
}

template <typename Scalar>
void SafetensorsFile::readMatrixInto(const std::string& name, MatrixOf<Scalar>& m) const
{
    const SafetensorsTensorInfo& tensor = info(name);
    if (tensor.shape.size() != 2)
        throw Error(path_ + ": " + tensorLabel(name) + " has shape " + shapeText(tensor.shape) + " (" +
                    std::to_string(tensor.shape.size()) + "-D); expected a matrix (2-D)");
    checkMemoryFor(tensor);
    try {
        m.resize(static_cast<Index>(tensor.shape[0]), static_cast<Index>(tensor.shape[1]));
    } catch (const std::bad_alloc&) {
        throw Error(path_ + ": " + tensorLabel(name) + ": not enough memory to read it");
    }
    convert(tensor, 0, tensor.elementCount(), m.data());
}

std::optional<Eigen::Map<const MatrixF>> SafetensorsFile::storedFloat32(const std::string& name) const
{
    const SafetensorsTensorInfo& tensor = info(name);
    const unsigned char* data = bytes_->data + dataStart_ + tensor.dataBegin;
    if (tensor.dtype != "F32" || tensor.shape.size() != 2 ||
        reinterpret_cast<std::uintptr_t>(data) % alignof(float) != 0)
        return std::nullopt;
    // The file is little-endian, as this x86-64 host (convertElements assumes it too).
    const Eigen::Map<const MatrixF> stored(reinterpret_cast<const float*>(data),
                                           static_cast<Index>(tensor.shape[0]),
                                           static_cast<Index>(tensor.shape[1]));
    // Checked once per tensor: the mapped bytes do not change, and a scan at every read would cost every
    // forward pass a pass over all its weights.
    std::atomic<bool>& checked = foundFinite(tensor);
    if (!checked.load(std::memory_order_acquire)) {
        const bool finite = allPiecesPass(stored.size(), [&stored](Index first, Index size) {
            return isAllFinite(Eigen::Map<const Eigen::ArrayXf>(stored.data() + first, size));
        });
        if (!finite)
            readMatrixFloat32(name); // refuses, naming the first element that is not finite
        checked.store(true, std::memory_order_release);
    }
    return stored;
}

template void SafetensorsFile::readMatrixInto<double>(const std::string&, Matrix&) const;
template void SafetensorsFile::readMatrixInto<float>(const std::string&, MatrixF&) const;

RowVector SafetensorsFile::readVector(const std::string& name) const
{
    const SafetensorsTensorInfo& tensor = info(name);
    if (tensor.shape.size() != 1)
        throw Error(path_ + ": " + tensorLabel(name) + " has shape " + shapeText(tensor.shape) + " (" +
                    std::to_string(tensor.shape.size()) + "-D); expected a vector (1-D)");
    checkMemoryFor(tensor);
    RowVector v;
    try {
        v.resize(static_cast<Index>(tensor.shape[0]));
    } catch (const std::bad_alloc&) {
        throw Error(path_ + ": " + tensorLabel(name) + ": not enough memory to read it");
    }
    convert(tensor, 0, tensor.elementCount(), v.data());
    return v;
}

Matrix SafetensorsFile::readRows(const std::string& name, const std::vector<Index>& rows) const
{
    const SafetensorsTensorInfo& tensor = info(name);
    if (tensor.shape.size() != 2)
        throw Error(path_ + ": " + tensorLabel(name) + " has shape " + shapeText(tensor.shape) + " (" +
                    std::to_string(tensor.shape.size()) + "-D); expected a matrix (2-D)");
    const std::uint64_t columns = tensor.shape[1];
    if (columns > 0 && rows.size() > defaultMemoryLimit() / sizeof(double) / columns)
        throw Error(path_ + ": " + tensorLabel(name) + ": " + std::to_string(rows.size()) +
                    " rows need more than the memory limit of " + formatBytes(defaultMemoryLimit()));
    Matrix m(static_cast<Index>(rows.size()), static_cast<Index>(columns));
    for (std::size_t k = 0; k < rows.size(); ++k) {
        if (rows[k] < 0 || static_cast<std::uint64_t>(rows[k]) >= tensor.shape[0])
            throw Error(path_ + ": " + tensorLabel(name) + ": row " + std::to_string(rows[k]) +
                        " is outside its " + std::to_string(tensor.shape[0]) + " rows");
        convert(tensor, static_cast<std::uint64_t>(rows[k]) * columns, columns, m.row(Index(k)).data());
    }
    return m;
}

// Writing ------------------------------------------------------------------------------------------------

namespace {

/// `value` rounded to nearest, ties to even, in a binary format with `fractionBits` bits after the point and
/// smallest normal exponent `minExponent`; infinity when it rounds past `largest`.
double roundToFormat(double value, int fractionBits, int minExponent, double largest)
{
    if (value == 0.0)
        return value;
    int exponent = 0;
    std::frexp(value, &exponent); // value = m · 2^exponent, 0.5 ≤ |m| < 1
    const double quantum = std::ldexp(1.0, std::max(exponent - 1, minExponent) - fractionBits);
    const double rounded = std::nearbyint(value / quantum) * quantum; // exact: quantum is a power of two
    return std::abs(rounded) > largest ? std::copysign(std::numeric_limits<double>::infinity(), value)
                                       : rounded;
}

std::uint16_t halfBits(double value) // value is exactly an F16
{
    const std::uint16_t sign = std::signbit(value) ? 0x8000 : 0;
    const double magnitude = std::abs(value);
    if (magnitude == 0.0)
        return sign;
    int exponent = 0;
    std::frexp(magnitude, &exponent);
    --exponent; // magnitude = 1.f · 2^exponent
    if (exponent < -14)
        return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::ldexp(magnitude, 24)));
    const auto fraction = static_cast<std::uint16_t>(std::ldexp(magnitude, 10 - exponent) - 1024);
    return static_cast<std::uint16_t>(sign | ((exponent + 15) << 10) | fraction);
}

template <typename T> void appendBytes(std::string& out, T value)
{
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out.append(bytes, sizeof(T));
}

} // namespace

std::string formatSafetensors(const std::vector<SafetensorsTensor>& tensors,
                              const std::map<std::string, std::string>& metadata)
{
    Json header = Json::object();
    if (!metadata.empty()) {
        Json entries = Json::object();
        for (const auto& [key, value] : metadata)
            entries[key] = value;
        header["__metadata__"] = std::move(entries);
    }
    std::string data;
    for (const SafetensorsTensor& t : tensors) {
        const std::string label = tensorLabel(t.name);
        if (t.name == "__metadata__" || header.contains(t.name))
            throw Error(label + ": the name is reserved or used twice");
        if (!isReadableSafetensorsDtype(t.dtype))
            throw Error(label + ": cannot write dtype " + quotedExcerpt(t.dtype) +
                        " (only F64, F32, F16, BF16)");
        std::uint64_t count = 1;
        for (std::uint64_t d : t.shape)
            if (__builtin_mul_overflow(count, d, &count))
                throw Error(label + ": shape " + shapeText(t.shape) + " is too large");
        if (count != t.values.size())
            throw Error(label + ": shape " + shapeText(t.shape) + " has " + std::to_string(count) +
                        " elements, but " + std::to_string(t.values.size()) + " values are given");
        const std::uint64_t begin = data.size();
        for (std::size_t i = 0; i < t.values.size(); ++i) {
            const double x = t.values[i];
            double rounded = x;
            if (t.dtype == "F32")
                rounded = roundToFormat(x, 23, -126, std::numeric_limits<float>::max());
            else if (t.dtype == "F16")
                rounded = roundToFormat(x, 10, -14, 65504.0);
            else if (t.dtype == "BF16")
                rounded = roundToFormat(x, 7, -126, std::ldexp(255.0, 120));
            if (!std::isfinite(rounded))
                throw Error(label + ": value " + std::to_string(i) + " (" + Json(x).dump() +
                            ") is not a finite " + t.dtype + " number");
            if (t.dtype == "F64") {
                appendBytes(data, rounded);
            } else if (t.dtype == "F32") {
                appendBytes(data, static_cast<float>(rounded)); // exact
            } else if (t.dtype == "F16") {
                appendBytes(data, halfBits(rounded));
            } else {
                std::uint32_t bits = 0;
                const auto single = static_cast<float>(rounded); // exact: a BF16 is an F32
                std::memcpy(&bits, &single, sizeof bits);
                appendBytes(data, static_cast<std::uint16_t>(bits >> 16));
            }
        }
        header[t.name] = Json{{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string file;
    file.reserve(lengthBytes + text.size() + data.size());
    appendBytes(file, static_cast<std::uint64_t>(text.size()));
    file += text;
    file += data;
    return file;
}

void writeSafetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                      const std::map<std::string, std::string>& metadata)
{
    writeFileAtomically(path, formatSafetensors(tensors, metadata));
}

// Checkpoints
// ------------------------------------------------------------------------------------------------

Checkpoint Checkpoint::open(const std::string& path)
{
    Checkpoint checkpoint;
    checkpoint.path_ = path;
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
        const std::string indexPath = joinPath(path, indexFileName);
        const std::string singlePath = joinPath(path, singleFileName);
        // model.safetensors first, as Hugging Face's loader looks for it first.
        if (::stat(singlePath.c_str(), &info) != 0 && ::stat(indexPath.c_str(), &info) == 0) {
            const auto refuse = [&indexPath](const std::string& problem) {
                throw Error(indexPath + ": " + problem);
            };
            Json index;
            try {
                index = json::parseJsonStrictly(
                    readRegularFile(indexPath, maxIndexBytes, "a checkpoint index"), json::JsonLimits{});
            } catch (const Error& e) {
                const std::string what = e.what();
                throw Error(what.rfind(indexPath, 0) == 0 ? what : indexPath + ": " + what);
            }
            if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
                refuse("expected a JSON object with \"weight_map\" (tensor name → shard file)");
            const Json& weightMap = index["weight_map"];
            if (weightMap.empty())
                refuse("weight_map is empty");
            std::map<std::string, std::size_t> shards; // file name → index in files_
            for (auto it = weightMap.begin(); it != weightMap.end(); ++it) {
                const std::string where = "weight_map: " + tensorLabel(it.key()) + ": ";
                if (!it.value().is_string())
                    refuse(where + "expected the name of a shard file");
                const std::string shard = it.value().get<std::string>();
                if (!isPlainFileName(shard))
                    refuse(where + "shard " + quotedExcerpt(shard, 200) +
                           " is not a plain file name in the model's folder");
                shards.emplace(shard, 0);
            }
            for (auto& [shard, fileIndex] : shards) {
                try {
                    checkpoint.files_.push_back(SafetensorsFile::open(joinPath(path, shard)));
                } catch (const Error& e) {
                    throw Error(std::string(e.what()) + " (a shard named by " + indexPath + ")");
                }
                fileIndex = checkpoint.files_.size() - 1;
            }
            for (auto it = weightMap.begin(); it != weightMap.end(); ++it) {
                const std::size_t fileIndex = shards.at(it.value().get<std::string>());
                if (!checkpoint.files_[fileIndex].has(it.key()))
                    refuse("weight_map: " + tensorLabel(it.key()) + " is not in its shard " +
                           quotedExcerpt(it.value().get<std::string>(), 200));
                checkpoint.fileIndex_.emplace(it.key(), fileIndex);
            }
            return checkpoint;
        }
        if (::stat(singlePath.c_str(), &info) != 0)
            throw Error(path + ": no " + singleFileName + " or " + indexFileName + " in this folder");
        checkpoint.files_.push_back(SafetensorsFile::open(singlePath));
    } else {
        checkpoint.files_.push_back(SafetensorsFile::open(path)); // one file, or refused as what it is
    }
    for (const SafetensorsTensorInfo& t : checkpoint.files_.front().tensors())
        checkpoint.fileIndex_.emplace(t.name, 0);
    return checkpoint;
}

std::vector<std::string> Checkpoint::tensorNames() const
{
    std::vector<std::string> names;
    names.reserve(fileIndex_.size());
    for (const auto& [name, file] : fileIndex_)
        names.push_back(name);
    return names;
}

bool Checkpoint::has(const std::string& name) const
{
    return fileIndex_.count(name) != 0;
}

const SafetensorsFile& Checkpoint::fileOf(const std::string& name) const
{
    const auto it = fileIndex_.find(name);
    if (it == fileIndex_.end())
        throw Error(path_ + ": the checkpoint has no " + tensorLabel(name));
    return files_[it->second];
}

const SafetensorsTensorInfo& Checkpoint::info(const std::string& name) const
{
    return fileOf(name).info(name);
}

Matrix Checkpoint::readMatrix(const std::string& name) const
{
    return fileOf(name).readMatrix(name);
}

MatrixF Checkpoint::readMatrixFloat32(const std::string& name) const
{
    return fileOf(name).readMatrixFloat32(name);
}

template <typename Scalar>
void Checkpoint::readMatrixInto(const std::string& name, MatrixOf<Scalar>& out) const
{
    fileOf(name).readMatrixInto(name, out);
}

std::optional<Eigen::Map<const MatrixF>> Checkpoint::storedFloat32(const std::string& name) const
{
    return fileOf(name).storedFloat32(name);
}

template void Checkpoint::readMatrixInto<double>(const std::string&, Matrix&) const;
template void Checkpoint::readMatrixInto<float>(const std::string&, MatrixF&) const;

RowVector Checkpoint::readVector(const std::string& name) const
{
    return fileOf(name).readVector(name);
}

Matrix Checkpoint::readRows(const std::string& name, const std::vector<Index>& rows) const
{
    return fileOf(name).readRows(name, rows);
}

} // namespace qkv
