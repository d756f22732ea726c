// The MPI library's own count of what each rank sent, read through MPI_T: Open MPI's
// point-to-point monitoring (the pml "monitoring" component). When it is loaded
// (MCA parameter pml_monitoring_enable, read at MPI_Init) Open MPI counts every message
// its point-to-point layer sends, per destination rank of MPI_COMM_WORLD, and publishes
// the counts as two performance variables bound to MPI_COMM_WORLD:
// pml_monitoring_messages_count and pml_monitoring_messages_size. A collective of the
// library (MPI_Allreduce's tuned algorithms) sends through that same layer, so the counts
// taken just before and just after one call are that call's messages, per peer.
//
// Modes of pml_monitoring_enable: 0 off; 1 every message counted alike (what collscope
// asks for); 2 and above "filtered": messages with a negative tag, which is every message
// of the library's own collectives, are counted apart and published in no performance
// variable. The variables then hold the user's point-to-point messages alone: a
// hand-written algorithm's (the MPI transport sends user messages) but none of a vendor
// collective's, which would read as zero (filtered() says so; the harness reports it).
//
// Open MPI 4.1 loses the two variables during MPI_Init: the monitoring component swaps
// itself in front of the selected pml when the framework closes the components it did
// not select, and that close also invalidates every performance variable registered
// under the component's name (MCA_BASE_PVAR_FLAG_IWG). The counting goes on; only its
// MPI_T view is gone (MPI_T_pvar_get_index answers MPI_T_ERR_INVALID_NAME). collscope
// then registers the variables again through the library's own exported registration
// function, mca_common_monitoring_register (libmca_common_monitoring, already loaded by
// the component), which revalidates them over the same counters. docs/vendor-volume.md
// has the details and what was measured.
//
// MPI_T is initialized after MPI_Init and finalized before MPI_Finalize: Open MPI 4.1.4
// crashes in MPI_T_finalize after MPI_Finalize when MPI_T was initialized first.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace collscope {

// What collscope asks of the library before MPI_Init: Open MPI's monitoring in mode 1,
// set in this process's environment (OMPI_MCA_pml_monitoring_enable=1) unless the
// environment already sets it (mpirun --mca pml_monitoring_enable ... or -x), which
// is respected. Other MPI libraries ignore the variable.
void request_mpi_monitoring();

// Messages and bytes one rank sent to each rank of MPI_COMM_WORLD.
struct SentCounts {
  std::vector<std::uint64_t> msgs, bytes;  // index: destination rank
};

// The library's counters around a window (start() .. stop()). Per process; opening it
// and reading it communicate with no one. Outside a window the counting is paused
// (stopping the variables pauses Open MPI's recording), so the timed calls pay only
// for the component's presence.
class MpiMonitor {
 public:
  // After MPI_Init. Never throws: a library without the counters leaves the monitor
  // unavailable, with the reason.
  MpiMonitor();
  ~MpiMonitor();
  MpiMonitor(const MpiMonitor&) = delete;
  MpiMonitor& operator=(const MpiMonitor&) = delete;

  bool available() const { return why_not_.empty(); }
  // Why there are no counts ("" when available): "not Open MPI (MPICH ...)",
  // "pml_monitoring_enable=0 (monitoring off)", ...
  const std::string& why_not() const { return why_not_; }
  // Filtered mode (pml_monitoring_enable >= 2): the counts leave out the library's
  // collectives; filter_reason() says so in one line.
  bool filtered() const { return mode_ >= 2; }
  std::string filter_reason() const;
  // Whether the counters were found only after registering them again (Open MPI 4.1).
  bool reregistered() const { return reregistered_; }

  void start();
  SentCounts stop();  // what this rank sent since start()

 private:
  void open();
  bool find_variables();
  void allocate_handles();
  std::vector<std::uint64_t> read(int which);

  std::string why_not_;
  int mode_ = -1;  // pml_monitoring_enable; -1 where the library does not say
  bool reregistered_ = false;
  bool mpit_ = false;  // MPI_T initialized by this object
  MPI_T_pvar_session session_ = MPI_T_PVAR_SESSION_NULL;
  MPI_T_pvar_handle handles_[2] = {MPI_T_PVAR_HANDLE_NULL, MPI_T_PVAR_HANDLE_NULL};
  int index_[2] = {-1, -1};  // messages_count, messages_size
  int width_ = 0;            // values per variable: the world size
  std::vector<std::uint64_t> before_[2];
};

// The source a row's measured volume came from, as the results say it.
inline constexpr const char* kMpiMonitoringSource = "mpi_t:pml_monitoring";

}  // namespace collscope
