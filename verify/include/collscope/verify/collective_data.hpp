// Inputs and exact expected results of every collective (layouts in collscope/
// collective.hpp), and the host buffers of one call, in or out of place. The harness
// and the MPI tests share them, so both check the same thing.
#pragma once

#include <cstddef>
#include <memory>

#include "collscope/collective.hpp"
#include "collscope/verify/data.hpp"

namespace collscope::verify {

// The data spec a collective's call uses: movement data where nothing is reduced.
DataSpec data_spec_for(const CollectiveInfo&, std::uint64_t seed, DataType, ReduceOp, int nranks);

// Writes `rank`'s input into a.sendbuf (send_count elements).
void fill_collective_input(const CollectiveInfo&, const CollArgs& a, const DataSpec&, int rank);
// Writes what `rank`'s receive buffer must hold afterwards (recv_count elements).
void fill_collective_expected(const CollectiveInfo&, void* want, const CollArgs& a,
                              const DataSpec&, int rank);

// The host buffers of one call: allocates what the layout needs and points
// args.sendbuf / args.recvbuf at it, in place or not.
class CallBuffers {
 public:
  // Throws UsageError when in place is asked of a collective without an in-place form.
  CallBuffers(const CollectiveInfo&, CollArgs& args, bool in_place, int rank, int nranks);
  std::size_t send_count() const { return send_count_; }
  std::size_t recv_count() const { return recv_count_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  using Buffer = std::unique_ptr<std::byte[], Free>;
  static Buffer alloc(std::size_t bytes);
  Buffer send_, recv_;
  std::size_t send_count_ = 0, recv_count_ = 0;
};

}  // namespace collscope::verify
