// What the allgather algorithms share: placing this rank's own block, the scratch check.
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/patterns/block.hpp"

namespace collscope::allgather_detail {

// Copies the send buffer to block(rank) of the receive buffer; in place (the send
// buffer already is that block) there is nothing to do.
inline void place_own_block(Comm& comm, const CollArgs& a) {
  const patterns::Block own = patterns::block_of(a.count, comm.size(), comm.rank());
  const std::size_t elem = a.elem_size();
  comm.reducer().copy(patterns::at(a.recvbuf, own, elem), a.sendbuf, own.count * elem);
}

// `need` bytes of scratch per rank against --max-scratch, refused before anything runs.
inline std::optional<std::string> scratch_check(const char* algorithm, std::size_t need,
                                                const CollArgs& a) {
  if (need <= a.scratch_limit) return std::nullopt;
  return std::string("allgather/") + algorithm + " needs " + std::to_string(need) +
         " B of scratch per rank, above the limit of " + std::to_string(a.scratch_limit) +
         " B (--max-scratch)";
}

}  // namespace collscope::allgather_detail
