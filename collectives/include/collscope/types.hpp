// Element types, reduction operators, memory kinds and transports, with the names
// nccl-tests (and -t) use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace collscope {

enum class DataType { int8, uint8, int32, int64, float16, bfloat16, float32, float64 };
enum class ReduceOp { sum, prod, max, min, avg };
enum class MemoryKind { host, device };
// The point-to-point transport (-t): MPI, UCX, or NCCL's send/receive (GPU memory).
enum class TransportKind { mpi, ucx, nccl };
// How device buffers cross ranks over -t mpi|ucx (--path; collscope/device/device_executor.hpp).
enum class DevicePath { cuda_aware, staged, ipc };

inline constexpr DataType kAllDataTypes[] = {DataType::int8,    DataType::uint8,
                                             DataType::int32,   DataType::int64,
                                             DataType::float16, DataType::bfloat16,
                                             DataType::float32, DataType::float64};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max,
                                             ReduceOp::min, ReduceOp::avg};

std::size_t dtype_size(DataType t);
bool is_floating(DataType t);
// nccl-tests spelling: int8 uint8 int32 int64 half bfloat16 float double.
std::string_view dtype_name(DataType t);
std::string_view op_name(ReduceOp op);
std::string_view memory_name(MemoryKind m);
std::string_view transport_name(TransportKind t);
std::string_view path_name(DevicePath p);

// Accepts the nccl-tests names and the aliases float16 float32 float64.
std::optional<DataType> parse_dtype(std::string_view s);
std::optional<ReduceOp> parse_op(std::string_view s);
std::optional<MemoryKind> parse_memory(std::string_view s);
// The transport a name means ("mpi", "ucx", "nccl"), or nullopt.
std::optional<TransportKind> transport_kind(std::string_view s);
std::optional<DevicePath> parse_path(std::string_view s);

// avg divides by the number of ranks, which has no exact meaning for integers: like
// NCCL's ncclAvg on floats only, collscope refuses it for integer types.
bool op_valid_for(ReduceOp op, DataType t);

}  // namespace collscope
