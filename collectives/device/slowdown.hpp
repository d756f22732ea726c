// A test hook of the device runtime: COLLSCOPE_DEVICE_SLOWDOWN=RANK:FACTOR[:what] makes the
// device copies of one rank FACTOR times slower, so that a slow GPU can be planted where
// there is none (scripts/accept's tests, acceptance/README.md). Not for measurements.
//
//   what     the copies it slows (all three when left out)
//   memory   device-to-device copies within this rank's own allocations (copy engine and
//            copy kernel): the GPU's memory
//   pcie     host-to-device and device-to-host copies: the GPU's PCIe link
//   peer     copies to or from a peer's memory mapped by IPC: the GPU-to-GPU path
//
// RANK is the rank in MPI_COMM_WORLD (0 where MPI is not initialized); FACTOR is a number
// from 1 to 1000. The emulated device sleeps (FACTOR - 1) times the copy's own duration
// after it; the CUDA runtime enqueues the same copy FACTOR - 1 more times (FACTOR rounded
// to an integer). Kernels other than the copy kernel (reduce, divide) are not slowed.
// A malformed value leaves the process without a device runtime (runtime.cpp: the reason
// is slowdown_problem()), so every rank refuses alike (exit 2, one line).
#pragma once

#include <cstddef>
#include <string>

#include "collscope/device/runtime.hpp"

namespace collscope::device {

// Why COLLSCOPE_DEVICE_SLOWDOWN is malformed, or "" (unset, or well formed).
std::string slowdown_problem();

// The factor the hook asks for this copy of this process (1: none). `rt` tells this
// process's allocations from a peer's mapped memory.
double slowdown_factor(const Runtime& rt, CopyKind kind, const void* dst, const void* src);

// The emulated device's slowdown: sleeps (factor - 1) x the time since `start_ns`
// (a steady_clock reading taken just before the copy).
void sleep_for_slowdown(double factor, long long start_ns);
long long steady_now_ns();

}  // namespace collscope::device
