// Open MPI's pml monitoring through MPI_T (collscope/mpi_monitoring.hpp).
#include "collscope/mpi_monitoring.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>

namespace collscope {
namespace {

constexpr const char* kVariables[2] = {"pml_monitoring_messages_count",
                                       "pml_monitoring_messages_size"};
constexpr const char* kEnableVariable = "pml_monitoring_enable";
constexpr const char* kMonitoringLibrary = "libmca_common_monitoring.so";

// The first line of MPI_Get_library_version.
std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  if (auto eol = s.find_first_of("\r\n,"); eol != std::string::npos) s.resize(eol);
  return s;
}

bool is_open_mpi() { return library_version().find("Open MPI") != std::string::npos; }

int pvar_index(const char* name) {
  int index = -1;
  return MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_SIZE, &index) == MPI_SUCCESS ? index : -1;
}

// pml_monitoring_enable through MPI_T's control variables, or -1 when it has none.
int enable_from_cvar() {
  int index = -1, count = 0, value = -1;
  if (MPI_T_cvar_get_index(kEnableVariable, &index) != MPI_SUCCESS) return -1;
  MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &h, &count) != MPI_SUCCESS) return -1;
  if (count != 1 || MPI_T_cvar_read(h, &value) != MPI_SUCCESS) value = -1;
  MPI_T_cvar_handle_free(&h);
  return value;
}

// The path of the loaded libmca_common_monitoring, "" when it is not loaded.
std::string loaded_monitoring_library() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        if (info->dlpi_name && std::strstr(info->dlpi_name, kMonitoringLibrary)) {
          *static_cast<std::string*>(out) = info->dlpi_name;
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}

// Open MPI 4.1's monitoring library as loaded by its pml component: the mode it runs in
// and its registration function (collscope/mpi_monitoring.hpp says why it is needed).
struct MonitoringLibrary {
  void* handle = nullptr;
  const int* enabled = nullptr;
  void (*register_variables)(void*) = nullptr;

  MonitoringLibrary() {
    const std::string path = loaded_monitoring_library();
    if (path.empty()) return;
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);  // never loads it anew
    if (!handle) return;
    enabled = static_cast<const int*>(dlsym(handle, "mca_common_monitoring_enabled"));
    register_variables =
        reinterpret_cast<void (*)(void*)>(dlsym(handle, "mca_common_monitoring_register"));
  }
  ~MonitoringLibrary() {
    if (handle) dlclose(handle);  // drops only the reference taken above
  }
};

std::string off_reason() { return "Open MPI's pml monitoring is off (pml_monitoring_enable=0)"; }

}  // namespace

void request_mpi_monitoring() { setenv("OMPI_MCA_pml_monitoring_enable", "1", 0); }

MpiMonitor::MpiMonitor() {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    why_not_ = "MPI_T_init_thread failed";
    return;
  }
  mpit_ = true;
  open();
  if (available()) allocate_handles();
}

MpiMonitor::~MpiMonitor() {
  for (MPI_T_pvar_handle& h : handles_)
    if (h != MPI_T_PVAR_HANDLE_NULL) MPI_T_pvar_handle_free(session_, &h);
  if (session_ != MPI_T_PVAR_SESSION_NULL) MPI_T_pvar_session_free(&session_);
  if (mpit_) MPI_T_finalize();
}

bool MpiMonitor::find_variables() {
  for (int i = 0; i < 2; ++i) index_[i] = pvar_index(kVariables[i]);
  return index_[0] >= 0 && index_[1] >= 0;
}

// Finds the two variables, registering them again where Open MPI 4.1 lost them.
void MpiMonitor::open() {
  mode_ = enable_from_cvar();
  if (find_variables()) return;
  if (!is_open_mpi()) {
    why_not_ = "not Open MPI (" + library_version() + ")";
    return;
  }
  const MonitoringLibrary lib;
  mode_ = lib.enabled ? *lib.enabled : 0;
  if (mode_ <= 0) {
    why_not_ = off_reason();
    return;
  }
  if (lib.register_variables) lib.register_variables(nullptr);
  if (!find_variables()) {
    why_not_ = "Open MPI's pml monitoring is on but its MPI_T variables were not found";
    return;
  }
  reregistered_ = true;
}

std::string MpiMonitor::filter_reason() const {
  return "pml_monitoring_enable=" + std::to_string(mode_) +
         " filters the library's collective messages out of MPI_T's counts";
}

void MpiMonitor::allocate_handles() {
  MPI_T_pvar_session_create(&session_);
  MPI_Comm world = MPI_COMM_WORLD;
  MPI_Comm_size(MPI_COMM_WORLD, &width_);
  for (int i = 0; i < 2; ++i) {
    char name[128], desc[8];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity = 0, var_class = 0, bind = 0;
    int readonly = 0, continuous = 0, atomic = 0, count = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumtype;
    MPI_T_pvar_get_info(index_[i], name, &name_len, &verbosity, &var_class, &type, &enumtype, desc,
                        &desc_len, &bind, &readonly, &continuous, &atomic);
    int type_size = 0;
    if (type != MPI_DATATYPE_NULL) MPI_Type_size(type, &type_size);
    if (type_size != sizeof(std::uint64_t) ||
        MPI_T_pvar_handle_alloc(session_, index_[i], &world, &handles_[i], &count) != MPI_SUCCESS ||
        count != width_) {
      why_not_ = std::string(kVariables[i]) + " is not one 64-bit value per rank of MPI_COMM_WORLD";
      return;
    }
  }
  // Stopping a variable pauses the library's recording (a started one resumes it).
  MPI_T_pvar_start(session_, handles_[0]);
  MPI_T_pvar_stop(session_, handles_[0]);
}

std::vector<std::uint64_t> MpiMonitor::read(int which) {
  std::vector<std::uint64_t> v(static_cast<std::size_t>(width_), 0);
  MPI_T_pvar_read(session_, handles_[which], v.data());
  return v;
}

void MpiMonitor::start() {
  if (!available()) return;
  for (int i = 0; i < 2; ++i) {
    MPI_T_pvar_start(session_, handles_[i]);
    before_[i] = read(i);
  }
}

SentCounts MpiMonitor::stop() {
  SentCounts out;
  if (!available()) return out;
  std::vector<std::uint64_t> after[2] = {read(0), read(1)};
  for (MPI_T_pvar_handle h : handles_) MPI_T_pvar_stop(session_, h);
  for (std::size_t p = 0; p < after[0].size(); ++p) {
    after[0][p] -= before_[0][p];
    after[1][p] -= before_[1][p];
  }
  out.msgs = std::move(after[0]);
  out.bytes = std::move(after[1]);
  return out;
}

}  // namespace collscope
