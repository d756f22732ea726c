#include "collscope/layers/framework/gather.hpp"

#include <algorithm>
#include <cstdint>

#include "collscope/layers/compute/ops.hpp"

namespace collscope::layers {

std::vector<Tensor> gather_to_root(MPI_Comm comm, const Tensor& t) {
  int rank = 0, n = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &n);
  const std::uint64_t shape[2] = {t.rows, t.cols};
  std::vector<std::uint64_t> shapes(rank == 0 ? 2 * static_cast<std::size_t>(n) : 0);
  MPI_Gather(shape, 2, MPI_UINT64_T, shapes.data(), 2, MPI_UINT64_T, 0, comm);
  std::vector<Tensor> out;
  std::vector<int> counts, displs;
  std::vector<float> all;
  if (rank == 0) {
    int offset = 0;
    for (int r = 0; r < n; ++r) {
      out.emplace_back(shapes[2 * r], shapes[2 * r + 1]);
      counts.push_back(static_cast<int>(out.back().size()));
      displs.push_back(offset);
      offset += counts.back();
    }
    all.resize(static_cast<std::size_t>(offset));
  }
  MPI_Gatherv(t.data.data(), static_cast<int>(t.size()), MPI_FLOAT, all.data(), counts.data(),
              displs.data(), MPI_FLOAT, 0, comm);
  for (std::size_t r = 0; r < out.size(); ++r)
    std::copy_n(all.begin() + displs[r], counts[r], out[r].data.begin());
  return out;
}

std::vector<Tensor> gather_to_root(MPI_Comm comm, const Array& a) {
  return gather_to_root(comm, a.has_engine() ? ops::download(a) : Tensor());
}

std::vector<Tensor> parts_of(const std::vector<Tensor>& by_rank, const std::vector<int>& ranks) {
  std::vector<Tensor> out;
  for (int r : ranks) out.push_back(by_rank[static_cast<std::size_t>(r)]);
  return out;
}

std::vector<RefTensor> ref_parts(const std::vector<Tensor>& by_rank, const std::vector<int>& ranks) {
  std::vector<RefTensor> out;
  for (int r : ranks) out.push_back(to_ref(by_rank[static_cast<std::size_t>(r)]));
  return out;
}

}  // namespace collscope::layers
