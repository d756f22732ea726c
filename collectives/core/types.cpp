#include "collscope/types.hpp"

#include "collscope/enum_names.hpp"

namespace collscope {
namespace {

// In the order of each enum (collscope/enum_names.hpp).
constexpr std::string_view kDataTypeNames[] = {"int8", "uint8",    "int32", "int64",
                                               "half", "bfloat16", "float", "double"};
constexpr std::size_t kDataTypeSizes[] = {1, 1, 4, 8, 2, 2, 4, 8};
constexpr std::string_view kReduceOpNames[] = {"sum", "prod", "max", "min", "avg"};
constexpr std::string_view kMemoryKindNames[] = {"host", "device"};
constexpr std::string_view kTransportNames[] = {"mpi", "ucx", "nccl"};
constexpr std::string_view kPathNames[] = {"cuda_aware", "staged", "ipc"};

// The IEEE spellings, accepted beside nccl-tests' names.
struct Alias {
  std::string_view text;
  DataType type;
};
constexpr Alias kDataTypeAliases[] = {{"float16", DataType::float16},
                                      {"float32", DataType::float32},
                                      {"float64", DataType::float64}};

}  // namespace

std::size_t dtype_size(DataType t) {
  const auto i = static_cast<std::size_t>(t);
  return i < std::size(kDataTypeSizes) ? kDataTypeSizes[i] : 0;
}

bool is_floating(DataType t) {
  return t == DataType::float16 || t == DataType::bfloat16 || t == DataType::float32 ||
         t == DataType::float64;
}

std::string_view dtype_name(DataType t) { return name_of(t, kDataTypeNames); }
std::string_view op_name(ReduceOp op) { return name_of(op, kReduceOpNames); }
std::string_view memory_name(MemoryKind m) { return name_of(m, kMemoryKindNames); }
std::string_view transport_name(TransportKind t) { return name_of(t, kTransportNames); }
std::string_view path_name(DevicePath p) { return name_of(p, kPathNames); }

std::optional<DataType> parse_dtype(std::string_view s) {
  if (auto t = by_name<DataType>(s, kDataTypeNames)) return t;
  for (const Alias& a : kDataTypeAliases)
    if (s == a.text) return a.type;
  return std::nullopt;
}

std::optional<ReduceOp> parse_op(std::string_view s) { return by_name<ReduceOp>(s, kReduceOpNames); }

std::optional<MemoryKind> parse_memory(std::string_view s) {
  return by_name<MemoryKind>(s, kMemoryKindNames);
}

std::optional<TransportKind> transport_kind(std::string_view s) {
  return by_name<TransportKind>(s, kTransportNames);
}

std::optional<DevicePath> parse_path(std::string_view s) { return by_name<DevicePath>(s, kPathNames); }

bool op_valid_for(ReduceOp op, DataType t) { return op != ReduceOp::avg || is_floating(t); }

}  // namespace collscope
