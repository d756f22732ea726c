#include "h5.hpp"

#include "collscope/errors.hpp"

namespace collscope::results::h5 {

Id& Id::operator=(Id&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = std::exchange(other.id_, H5I_INVALID_HID);
  }
  return *this;
}

void Id::reset() {
  if (id_ >= 0) H5Idec_ref(id_);
  id_ = H5I_INVALID_HID;
}

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

namespace {

// The stack is walked from the innermost call outwards: the first entry says most.
herr_t keep_innermost(unsigned n, const H5E_error2_t* e, void* out) {
  auto& message = *static_cast<std::string*>(out);
  if (n == 0 && e->desc) message = e->desc;
  return 0;
}

}  // namespace

std::string error_message() {
  std::string message;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &message);
  return message;
}

hid_t check(hid_t status, const std::string& what) {
  if (status >= 0) return status;
  const std::string why = error_message();
  H5Eclear2(H5E_DEFAULT);
  throw RuntimeError(why.empty() ? what : what + ": " + why);
}

Id own(hid_t id, const std::string& what) { return Id(check(id, what)); }

}  // namespace collscope::results::h5
