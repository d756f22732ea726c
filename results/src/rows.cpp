#include "rows.hpp"

#include <cmath>
#include <limits>
#include <set>

#include "collscope/errors.hpp"

namespace collscope::results {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& key, const std::string& why) {
  throw RuntimeError("results: field '" + key + "': " + why);
}

// The value of `key`, or nullptr for a missing value the spec allows.
const json* value_of(const json& row, const char* key, Missing missing) {
  const auto it = row.find(key);
  if (it == row.end()) {
    if (missing != Missing::absent) fail(key, "missing from the row");
    return nullptr;
  }
  if (it->is_null()) {
    if (missing != Missing::null) fail(key, "is null");
    return nullptr;
  }
  return &*it;
}

template <class T>
T get(const json& v, const char* key) {
  try {
    return v.get<T>();
  } catch (const json::exception& e) {
    fail(key, e.what());
  }
}

void encode_scalar(Record& r, const ScalarSpec& s, const json& row) {
  const json* v = value_of(row, s.key, s.missing);
  switch (s.kind) {
    case Kind::i32:
    case Kind::i64: r.set_int(s.key, v ? get<std::int64_t>(*v, s.key) : -1); break;
    case Kind::u64: r.set_u64(s.key, get<std::uint64_t>(*v, s.key)); break;
    case Kind::f64: r.set_f64(s.key, v ? get<double>(*v, s.key) : std::nan("")); break;
    case Kind::boolean: r.set_bool(s.key, get<bool>(*v, s.key)); break;
    case Kind::text: r.set_text(s.key, v ? get<std::string>(*v, s.key) : ""); break;
  }
}

void encode_pair(Record& r, const PairSpec& p, const json& row) {
  const json* v = value_of(row, p.key, p.missing);
  const auto ab = v ? get<std::vector<std::int64_t>>(*v, p.key) : std::vector<std::int64_t>{-1, -1};
  if (ab.size() != 2) fail(p.key, "is not a pair");
  r.set_int(std::string(p.key) + "_a", ab[0]);
  r.set_int(std::string(p.key) + "_b", ab[1]);
}

void encode_text_list(Record& r, const TextListSpec& l, const json& row) {
  std::string joined;
  for (const std::string& s : get<std::vector<std::string>>(*value_of(row, l.key, Missing::never), l.key)) {
    if (!joined.empty()) joined += '\n';
    joined += s;
  }
  r.set_text(l.key, joined);
}

template <class T>
std::vector<T> flatten(const json& v, const PoolSpec& p, std::size_t nranks) {
  if (!p.square) return get<std::vector<T>>(v, p.key);
  std::vector<T> out;
  for (const json& line : v) {
    const auto values = get<std::vector<T>>(line, p.key);
    if (values.size() != nranks) fail(p.key, "is not nranks x nranks");
    out.insert(out.end(), values.begin(), values.end());
  }
  if (out.size() != nranks * nranks) fail(p.key, "is not nranks x nranks");
  return out;
}

PoolValues encode_pool(const PoolSpec& p, const json& row, std::size_t nranks) {
  PoolValues out{&p, false, {}, {}};
  const json* v = value_of(row, p.key, p.missing);
  if (!v) return out;
  out.present = true;
  if (p.kind == Kind::u64) out.u64 = flatten<std::uint64_t>(*v, p, nranks);
  else out.f64 = flatten<double>(*v, p, nranks);
  return out;
}

void reject_unknown_row_keys(const TableSpec& t, const json& row) {
  std::set<std::string> known;
  for (const ScalarSpec& s : t.scalars) known.insert(s.key);
  for (const PairSpec& p : t.pairs) known.insert(p.key);
  for (const TextListSpec& l : t.text_lists) known.insert(l.key);
  for (const RankGroupSpec& g : t.rank_groups)
    for (const RankColumn& c : g.columns) known.insert(c.key);
  for (const PoolSpec& p : t.pools) known.insert(p.key);
  reject_unknown_keys(known, row, t.name);
}

}  // namespace

void reject_unknown_keys(const std::set<std::string>& known, const json& object, const std::string& where) {
  if (!object.is_object()) throw RuntimeError("results: a " + where + " record must be a JSON object");
  for (const auto& item : object.items())
    if (!known.count(item.key()))
      fail(item.key(), "has no column in the " + where + " table (update results/ and SCHEMA.md)");
}

void encode_scalars(Record& r, const std::vector<ScalarSpec>& scalars, const json& object) {
  for (const ScalarSpec& s : scalars) encode_scalar(r, s, object);
}

bool encode_rank_group(std::vector<Record>& ranks, const RankGroupSpec& g, const json& row) {
  bool known = false;
  for (std::size_t c = 0; c < g.columns.size(); ++c) {
    const RankColumn& col = g.columns[c];
    const json* v = value_of(row, col.key, g.empty_when_missing ? Missing::never : Missing::null);
    const bool has = v && !(g.empty_when_missing && v->empty());
    if (c > 0 && has != known) fail(col.key, std::string("is null unlike '") + g.columns[0].key + "'");
    known = has;
    if (!has) continue;
    if (v->size() != ranks.size()) fail(col.key, "has " + std::to_string(v->size()) + " values, not nranks");
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (g.kind == Kind::u64) ranks[i].set_u64(col.column, get<std::uint64_t>((*v)[i], col.key));
      else ranks[i].set_int(col.column, get<std::int64_t>((*v)[i], col.key));
    }
  }
  return known;
}

std::size_t EncodedRow::payload_bytes() const {
  std::size_t n = row.layout().size() * (1 + ranks.size());
  for (const PoolValues& p : pools) n += 8 * p.size();
  return n;
}

EncodedRow encode_row(const TableSpec& t, const json& row) {
  if (!row.is_object()) throw RuntimeError("results: a " + t.name + " row must be a JSON object");
  reject_unknown_row_keys(t, row);
  EncodedRow e{Record(t.rows), {}, {}};
  encode_scalars(e.row, t.scalars, row);
  for (const PairSpec& p : t.pairs) encode_pair(e.row, p, row);
  for (const TextListSpec& l : t.text_lists) encode_text_list(e.row, l, row);
  const std::int64_t nranks = e.row.get_int("nranks");
  if (nranks < 1) fail("nranks", "must be at least 1");
  e.ranks.assign(static_cast<std::size_t>(nranks), Record(t.ranks));
  for (std::size_t i = 0; i < e.ranks.size(); ++i) e.ranks[i].set_int("rank", static_cast<std::int64_t>(i));
  for (const RankGroupSpec& g : t.rank_groups) e.row.set_bool(g.known, encode_rank_group(e.ranks, g, row));
  for (const PoolSpec& p : t.pools) e.pools.push_back(encode_pool(p, row, e.ranks.size()));
  return e;
}

// ---- decoding ---------------------------------------------------------------------------

namespace {

json decode_scalar(const Record& r, const ScalarSpec& s) {
  switch (s.kind) {
    case Kind::i32:
    case Kind::i64: {
      const std::int64_t v = r.get_int(s.key);
      return s.missing != Missing::never && v == -1 ? json(nullptr) : json(v);
    }
    case Kind::u64: return r.get_u64(s.key);
    case Kind::f64: {
      const double v = r.get_f64(s.key);
      return s.missing != Missing::never && std::isnan(v) ? json(nullptr) : json(v);
    }
    case Kind::boolean: return r.get_bool(s.key);
    case Kind::text: {
      const std::string v = r.get_text(s.key);
      return s.missing != Missing::never && v.empty() ? json(nullptr) : json(v);
    }
  }
  return nullptr;
}

// null stands for "missing": dropped from the row when the spec says absent.
void put(json& row, const char* key, json value, Missing missing) {
  if (value.is_null() && missing == Missing::absent) return;
  row[key] = std::move(value);
}

json decode_pair(const Record& r, const PairSpec& p) {
  const std::int64_t a = r.get_int(std::string(p.key) + "_a"), b = r.get_int(std::string(p.key) + "_b");
  return a == -1 && b == -1 ? json(nullptr) : json{a, b};
}

json decode_text_list(const Record& r, const TextListSpec& l) {
  json out = json::array();
  const std::string joined = r.get_text(l.key);
  for (std::size_t start = 0; start < joined.size();) {
    const std::size_t end = std::min(joined.find('\n', start), joined.size());
    out.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

void decode_rank_group(json& row, const Record& r, const RankGroupSpec& g, const std::vector<Record>& ranks) {
  const auto first = static_cast<std::size_t>(r.get_int("ranks_offset"));
  const auto count = static_cast<std::size_t>(r.get_int("ranks_count"));
  const bool known = r.get_bool(g.known);
  for (const RankColumn& c : g.columns) {
    json values = json::array();
    for (std::size_t i = first; known && i < first + count; ++i)
      values.push_back(g.kind == Kind::u64 ? json(ranks.at(i).get_u64(c.column))
                                           : json(ranks.at(i).get_int(c.column)));
    row[c.key] = known || g.empty_when_missing ? values : json(nullptr);
  }
}

namespace {

template <class T>
json pool_slice(const std::vector<T>& pool, std::size_t offset, std::size_t count, bool square,
                std::size_t nranks) {
  const auto begin = pool.begin() + static_cast<std::ptrdiff_t>(offset);
  if (!square) return std::vector<T>(begin, begin + static_cast<std::ptrdiff_t>(count));
  json out = json::array();
  for (std::size_t i = 0; i < nranks; ++i) {
    const auto line = begin + static_cast<std::ptrdiff_t>(i * nranks);
    out.push_back(std::vector<T>(line, line + static_cast<std::ptrdiff_t>(nranks)));
  }
  return out;
}

json decode_pool(const Record& r, const PoolSpec& p, const TableData& d) {
  const std::int64_t offset = r.get_int(std::string(p.key) + "_offset");
  if (offset < 0) return nullptr;
  const auto count = static_cast<std::size_t>(r.get_int(std::string(p.key) + "_count"));
  const auto nranks = static_cast<std::size_t>(r.get_int("nranks"));
  const auto at = static_cast<std::size_t>(offset);
  if (p.kind == Kind::u64) {
    const std::vector<std::uint64_t>& pool = d.u64_pools.at(p.key);
    if (at + count > pool.size()) throw RuntimeError(std::string("results: pool ") + p.key + " is too short");
    return pool_slice(pool, at, count, p.square, nranks);
  }
  const std::vector<double>& pool = d.f64_pools.at(p.key);
  if (at + count > pool.size()) throw RuntimeError(std::string("results: pool ") + p.key + " is too short");
  return pool_slice(pool, at, count, p.square, nranks);
}

}  // namespace

void decode_scalars(json& object, const Record& r, const std::vector<ScalarSpec>& scalars) {
  for (const ScalarSpec& s : scalars) put(object, s.key, decode_scalar(r, s), s.missing);
}

json decode_row(const TableSpec& t, const TableData& d, std::size_t i) {
  const Record& r = d.rows.at(i);
  json row = json::object();
  decode_scalars(row, r, t.scalars);
  for (const PairSpec& p : t.pairs) put(row, p.key, decode_pair(r, p), p.missing);
  for (const TextListSpec& l : t.text_lists) row[l.key] = decode_text_list(r, l);
  for (const RankGroupSpec& g : t.rank_groups) decode_rank_group(row, r, g, d.ranks);
  for (const PoolSpec& p : t.pools) put(row, p.key, decode_pool(r, p, d), p.missing);
  return row;
}

}  // namespace collscope::results
