#include "eoa_guard.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "collscope/errors.hpp"
#include "h5.hpp"

namespace collscope::results {
namespace {

constexpr std::uint64_t kMinReserve = std::uint64_t{16} << 20;  // sparse: costs no disk

[[noreturn]] void io_error(const std::string& what) {
  throw RuntimeError("results file: " + what + ": " + std::strerror(errno));
}

// Superblock v0/v1 (HDF5 file format spec, "Superblock"): signature, version at byte 8,
// size of offsets at 13; the base address follows the consistency flags (v1: plus 4
// bytes), then the free-space address and the end-of-file address.
long eoa_field_offset(int fd) {
  std::array<unsigned char, 48> sb{};
  if (pread(fd, sb.data(), sb.size(), 0) != static_cast<ssize_t>(sb.size())) return 0;
  if (std::memcmp(sb.data(), "\x89HDF\r\n\x1a\n", 8) != 0 || sb[13] != 8) return 0;
  const long base = sb[8] == 0 ? 24 : sb[8] == 1 ? 28 : 0;
  if (base == 0) return 0;
  for (long i = base; i < base + 8; ++i)
    if (sb[static_cast<std::size_t>(i)] != 0) return 0;  // a base address: not ours
  return base + 16;
}

}  // namespace

EoaGuard::EoaGuard(const std::string& path, hid_t file) : file_(file) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) io_error("cannot open '" + path + "'");
  eoa_offset_ = eoa_field_offset(fd_);
}

EoaGuard::EoaGuard(EoaGuard&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), file_(other.file_), eoa_offset_(other.eoa_offset_) {}

EoaGuard& EoaGuard::operator=(EoaGuard&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    file_ = other.file_;
    eoa_offset_ = other.eoa_offset_;
  }
  return *this;
}

EoaGuard::~EoaGuard() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t EoaGuard::stored_eoa() const {
  std::uint64_t eoa = 0;  // little-endian on disk, as on every host we build for
  if (pread(fd_, &eoa, 8, eoa_offset_) != 8) io_error("cannot read the superblock");
  return eoa;
}

void EoaGuard::store_eoa(std::uint64_t eoa) {
  if (pwrite(fd_, &eoa, 8, eoa_offset_) != 8) io_error("cannot write the superblock");
}

std::uint64_t EoaGuard::real_eoa() const {
  haddr_t eoa = 0;
  h5::check(H5Fget_eoa(file_, &eoa), "cannot get the end of the file");
  return eoa;
}

void EoaGuard::reserve(std::uint64_t bytes) {
  if (fd_ < 0 || eoa_offset_ == 0) return;
  const std::uint64_t target = real_eoa() + kMinReserve + 2 * bytes;
  struct stat st {};
  if (fstat(fd_, &st) != 0) io_error("cannot stat the file");
  if (static_cast<std::uint64_t>(st.st_size) < target && ftruncate(fd_, static_cast<off_t>(target)) != 0)
    io_error("cannot extend the file");
  store_eoa(target);
}

void EoaGuard::release() {
  if (fd_ < 0 || eoa_offset_ == 0) return;
  store_eoa(real_eoa());
}

void EoaGuard::trim() {
  if (fd_ < 0 || eoa_offset_ == 0) return;
  const std::uint64_t eoa = stored_eoa();
  struct stat st {};
  if (fstat(fd_, &st) == 0 && static_cast<std::uint64_t>(st.st_size) > eoa)
    if (ftruncate(fd_, static_cast<off_t>(eoa)) != 0) io_error("cannot trim the file");
  ::close(fd_);
  fd_ = -1;
}

}  // namespace collscope::results
