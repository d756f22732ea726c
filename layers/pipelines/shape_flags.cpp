#include "collscope/layers/pipelines/shape_flags.hpp"

#include "collscope/errors.hpp"

namespace collscope::layers {

void add_token_flags(CLI::App& app, TokenShape& s, const std::string& seq_help,
                     const std::string& hidden_help) {
  app.add_option("-S,--seq", s.seq, seq_help);
  app.add_option("-B,--batch", s.batch, "micro-batch size B (sequences)");
  app.add_option("-H,--hidden", s.hidden, hidden_help);
}

void add_attention_flags(CLI::App& app, TokenShape& s, AttentionFlags& a,
                         const std::string& seq_help) {
  add_token_flags(app, s, seq_help, "hidden size H, divisible by --heads");
  app.add_option("--heads", a.heads, "attention heads, divisible by TP (H by heads)");
  app.add_option("--causal", a.causal, "1: causal mask (GPT), 0: full attention");
}

void device_default(const CLI::App& app, const char* flag, std::int64_t& value,
                    std::int64_t device_value) {
  if (app.count(flag) == 0) value = device_value;
}

void token_device_defaults(const CLI::App& app, TokenShape& s) {
  device_default(app, "--seq", s.seq, kDeviceSeq);
  device_default(app, "--batch", s.batch, kDeviceBatch);
  device_default(app, "--hidden", s.hidden, kDeviceHidden);
}

void attention_device_defaults(const CLI::App& app, TokenShape& s, AttentionFlags& a) {
  token_device_defaults(app, s);
  device_default(app, "--heads", a.heads, kDeviceHeads);
}

void require_at_least(std::int64_t value, std::int64_t min, std::string_view flag) {
  if (value < min)
    throw UsageError(std::string(flag) + " must be at least " + std::to_string(min) + ", got " +
                     std::to_string(value));
}

void check_token_shape(const TokenShape& s) {
  require_at_least(s.seq, 1, "--seq");
  require_at_least(s.batch, 1, "--batch");
  require_at_least(s.hidden, 1, "--hidden");
}

void check_attention_flags(const TokenShape& s, const AttentionFlags& a) {
  check_token_shape(s);
  require_at_least(a.heads, 1, "--heads");
  if (a.causal != 0 && a.causal != 1)
    throw UsageError("--causal must be 0 or 1, got " + std::to_string(a.causal));
  if (s.hidden % a.heads != 0)
    throw UsageError("hidden size " + std::to_string(s.hidden) +
                     " is not divisible by the number of heads " + std::to_string(a.heads));
}

AttentionShape attention_shape(const TokenShape& s, const AttentionFlags& a) {
  return {s.b(), s.h() / static_cast<std::size_t>(a.heads), a.causal != 0};
}

nlohmann::ordered_json token_json(const TokenShape& s) {
  return {{"S", s.seq}, {"B", s.batch}, {"T", s.tokens()}, {"H", s.hidden}};
}

void add_attention_json(nlohmann::ordered_json& j, const TokenShape& s, const AttentionFlags& a) {
  j["heads"] = a.heads;
  j["head_dim"] = attention_shape(s, a).head_dim;
  j["causal"] = a.causal != 0;
}

}  // namespace collscope::layers
