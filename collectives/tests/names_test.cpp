// The name tables of the vocabulary's enums (collectives/core/types.cpp): every value's
// name reads back as that value, the spellings the command lines document are the ones
// the tables hold, and a word no table holds is refused.
#include <gtest/gtest.h>

#include "collscope/types.hpp"

namespace collscope {
namespace {

TEST(Names, EveryDataTypeReadsBackAndHasItsSize) {
  const char* nccl_tests[] = {"int8", "uint8", "int32", "int64", "half", "bfloat16", "float", "double"};
  const std::size_t sizes[] = {1, 1, 4, 8, 2, 2, 4, 8};
  for (std::size_t i = 0; i < std::size(kAllDataTypes); ++i) {
    const DataType t = kAllDataTypes[i];
    EXPECT_EQ(dtype_name(t), nccl_tests[i]);
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
    EXPECT_EQ(dtype_size(t), sizes[i]) << nccl_tests[i];
  }
  EXPECT_EQ(parse_dtype("float16"), DataType::float16);
  EXPECT_EQ(parse_dtype("float32"), DataType::float32);
  EXPECT_EQ(parse_dtype("float64"), DataType::float64);
  for (const char* bad : {"", "Float", "fp32", "int16", "float7"}) EXPECT_FALSE(parse_dtype(bad)) << bad;
}

TEST(Names, EveryOpMemoryTransportAndPathReadsBack) {
  for (ReduceOp op : kAllReduceOps) EXPECT_EQ(parse_op(op_name(op)), op);
  EXPECT_EQ(op_name(ReduceOp::avg), "avg");
  for (MemoryKind m : {MemoryKind::host, MemoryKind::device}) EXPECT_EQ(parse_memory(memory_name(m)), m);
  for (TransportKind t : {TransportKind::mpi, TransportKind::ucx, TransportKind::nccl})
    EXPECT_EQ(transport_kind(transport_name(t)), t);
  EXPECT_EQ(transport_name(TransportKind::ucx), "ucx");
  for (DevicePath p : {DevicePath::cuda_aware, DevicePath::staged, DevicePath::ipc})
    EXPECT_EQ(parse_path(path_name(p)), p);
  EXPECT_EQ(path_name(DevicePath::cuda_aware), "cuda_aware");
  EXPECT_FALSE(parse_op("mean"));
  EXPECT_FALSE(parse_memory("gpu"));
  EXPECT_FALSE(transport_kind("MPI"));
  EXPECT_FALSE(parse_path("host"));
}

}  // namespace
}  // namespace collscope
