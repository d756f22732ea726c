// The shape flags the layers share and their checks: tokens (-S/--seq, -B/--batch,
// -H/--hidden; T = S x B rows, row s B + b) and, for the layers with attention, --heads
// and --causal. A layer's Shape derives from these and adds its own (-F, -V, -K ...).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "collscope/layers/blocks/tp_local.hpp"

namespace collscope::layers {

struct TokenShape {
  std::int64_t seq = 8, batch = 2, hidden = 32;
  std::size_t s() const { return static_cast<std::size_t>(seq); }
  std::size_t b() const { return static_cast<std::size_t>(batch); }
  std::size_t tokens() const { return s() * b(); }
  std::size_t h() const { return static_cast<std::size_t>(hidden); }
};

struct AttentionFlags {
  std::int64_t heads = 4, causal = 1;
};

// -S (with `seq_help`), -B, -H (with `hidden_help`).
void add_token_flags(CLI::App& app, TokenShape& s, const std::string& seq_help,
                     const std::string& hidden_help = "hidden size H");
// A layer with attention: -S (with `seq_help`), -B, -H (divisible by --heads), --heads,
// --causal.
void add_attention_flags(CLI::App& app, TokenShape& s, AttentionFlags& a,
                         const std::string& seq_help);

// -m device: `value` becomes `device_value` unless the command line gave `flag` (its
// long name, "--seq").
void device_default(const CLI::App& app, const char* flag, std::int64_t& value,
                    std::int64_t device_value);
// The device defaults of the shared flags: S 4096, B 1, H 4096 (a GPU's shape: T = 4096
// tokens, each GEMM of the TP blocks at least 4096 x 4096 x 1024); --heads 32 (d 128).
void token_device_defaults(const CLI::App& app, TokenShape& s);
void attention_device_defaults(const CLI::App& app, TokenShape& s, AttentionFlags& a);
inline constexpr std::int64_t kDeviceSeq = 4096, kDeviceBatch = 1, kDeviceHidden = 4096,
                              kDeviceHeads = 32;

// Throws UsageError "--<flag> must be at least <min>, got <value>".
void require_at_least(std::int64_t value, std::int64_t min, std::string_view flag);
// S, B, H at least 1.
void check_token_shape(const TokenShape& s);
// check_token_shape, then heads at least 1, causal 0 or 1, H divisible by heads.
void check_attention_flags(const TokenShape& s, const AttentionFlags& a);

// The attention core's shape (tp_local.hpp): B sequences, d = H / heads, the mask.
AttentionShape attention_shape(const TokenShape& s, const AttentionFlags& a);

// The record's shape, begun: {"S", "B", "T", "H"}.
nlohmann::ordered_json token_json(const TokenShape& s);
// Appends "heads", "head_dim" and "causal" to it.
void add_attention_json(nlohmann::ordered_json& j, const TokenShape& s, const AttentionFlags& a);

}  // namespace collscope::layers
