#include "collscope/mpi_types.hpp"

#include <climits>

#include "collscope/errors.hpp"
#include "collscope/reducer.hpp"

namespace collscope {
namespace {

// Two distinct 2-byte types, so a user operator can tell half from bfloat16.
struct HalfTypes {
  MPI_Datatype half = MPI_DATATYPE_NULL, bf16 = MPI_DATATYPE_NULL;
  HalfTypes() {
    MPI_Type_contiguous(2, MPI_BYTE, &half);
    MPI_Type_commit(&half);
    MPI_Type_contiguous(2, MPI_BYTE, &bf16);
    MPI_Type_commit(&bf16);
  }
};

const HalfTypes& half_types() {
  static HalfTypes types;  // created after MPI_Init, on first use; freed by MPI_Finalize
  return types;
}

template <ReduceOp Op>
void reduce_16bit(void* in, void* inout, int* len, MPI_Datatype* dt) {
  const DataType t = *dt == half_types().half ? DataType::float16 : DataType::bfloat16;
  host_reducer().reduce(inout, in, inout, static_cast<std::size_t>(*len), t, Op);
}

MPI_Op user_op(ReduceOp op) {
  static MPI_Op ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  static MPI_User_function* fns[4] = {reduce_16bit<ReduceOp::sum>, reduce_16bit<ReduceOp::prod>,
                                      reduce_16bit<ReduceOp::max>, reduce_16bit<ReduceOp::min>};
  const int i = op == ReduceOp::avg ? 0 : static_cast<int>(op);
  if (ops[i] == MPI_OP_NULL) MPI_Op_create(fns[i], 1, &ops[i]);
  return ops[i];
}

}  // namespace

MPI_Datatype mpi_datatype(DataType t) {
  switch (t) {
    case DataType::int8: return MPI_INT8_T;
    case DataType::uint8: return MPI_UINT8_T;
    case DataType::int32: return MPI_INT32_T;
    case DataType::int64: return MPI_INT64_T;
    case DataType::float16: return half_types().half;
    case DataType::bfloat16: return half_types().bf16;
    case DataType::float32: return MPI_FLOAT;
    case DataType::float64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op, DataType t) {
  if (t == DataType::float16 || t == DataType::bfloat16) return user_op(op);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return MPI_SUM;
    case ReduceOp::prod: return MPI_PROD;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS)
    throw RuntimeError(std::string(call) + " failed with code " + std::to_string(rc));
}

}  // namespace collscope
