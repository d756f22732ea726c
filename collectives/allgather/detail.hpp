// What the allgather algorithms share: placing this rank's own block.
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

}  // namespace collscope::allgather_detail
