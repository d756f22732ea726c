// Keeps the end-of-allocation address (EOA) stored in the superblock ahead of what the
// writer allocates, so that a writer killed in the middle of an HDF5 flush never leaves
// a structure that points past the stored EOA (HDF5 refuses to read such addresses).
// SCHEMA.md, "Crash safety", explains why; superblock versions 0 and 1 only (no checksum).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

namespace collscope::results {

class EoaGuard {
 public:
  EoaGuard() = default;
  EoaGuard(const std::string& path, hid_t file);  // throws RuntimeError on I/O errors
  EoaGuard(const EoaGuard&) = delete;
  EoaGuard& operator=(const EoaGuard&) = delete;
  EoaGuard(EoaGuard&& other) noexcept;
  EoaGuard& operator=(EoaGuard&& other) noexcept;
  ~EoaGuard();

  // Before writing about `bytes`: stored EOA = the real EOA + room for them, with the file
  // extended (sparse) to at least that size first, so the stored EOA never passes EOF.
  void reserve(std::uint64_t bytes);
  // Before closing: stored EOA = the real EOA.
  void release();
  // After HDF5 closed the file: cut the file to the stored EOA (drops the reserve).
  void trim();

 private:
  std::uint64_t stored_eoa() const;
  void store_eoa(std::uint64_t eoa);
  std::uint64_t real_eoa() const;

  int fd_ = -1;
  hid_t file_ = H5I_INVALID_HID;
  long eoa_offset_ = 0;  // of the "end of file address" field in the superblock
};

}  // namespace collscope::results
