#include "collscope/types.hpp"

namespace collscope {

std::size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::int8:
    case DataType::uint8: return 1;
    case DataType::float16:
    case DataType::bfloat16: return 2;
    case DataType::int32:
    case DataType::float32: return 4;
    case DataType::int64:
    case DataType::float64: return 8;
  }
  return 0;
}

bool is_floating(DataType t) {
  return t == DataType::float16 || t == DataType::bfloat16 || t == DataType::float32 ||
         t == DataType::float64;
}

std::string_view dtype_name(DataType t) {
  switch (t) {
    case DataType::int8: return "int8";
    case DataType::uint8: return "uint8";
    case DataType::int32: return "int32";
    case DataType::int64: return "int64";
    case DataType::float16: return "half";
    case DataType::bfloat16: return "bfloat16";
    case DataType::float32: return "float";
    case DataType::float64: return "double";
  }
  return "?";
}

std::string_view op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::avg: return "avg";
  }
  return "?";
}

std::string_view memory_name(MemoryKind m) { return m == MemoryKind::host ? "host" : "device"; }

std::optional<DataType> parse_dtype(std::string_view s) {
  for (DataType t : kAllDataTypes)
    if (s == dtype_name(t)) return t;
  if (s == "float16") return DataType::float16;
  if (s == "float32") return DataType::float32;
  if (s == "float64") return DataType::float64;
  return std::nullopt;
}

std::optional<ReduceOp> parse_op(std::string_view s) {
  for (ReduceOp op : kAllReduceOps)
    if (s == op_name(op)) return op;
  return std::nullopt;
}

std::optional<MemoryKind> parse_memory(std::string_view s) {
  if (s == "host") return MemoryKind::host;
  if (s == "device") return MemoryKind::device;
  return std::nullopt;
}

bool op_valid_for(ReduceOp op, DataType t) { return op != ReduceOp::avg || is_floating(t); }

}  // namespace collscope
