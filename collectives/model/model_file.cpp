// The model file (MODEL.md, "The model file"): JSON, version 1 (five constants per link
// class, one reduce_rate) or version 2 (per link class latency, per-message overhead and
// bandwidth bands one way and both ways; reduce and copy rates in bands; the fit's spread
// and measured points kept beside them). Every problem is one UsageError line that names
// the file and the parameter.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "collscope/errors.hpp"
#include "collscope/model.hpp"

namespace collscope {
namespace {

using nlohmann::json;

enum class Rule { positive, non_negative };

struct Reader {
  std::string origin;

  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError("model file '" + origin + "': " + what);
  }

  // A finite number obeying `rule`; `path` names it in errors.
  double value(const json& v, const std::string& path, Rule rule) const {
    if (!v.is_number()) fail(path + " must be a number, got " + v.dump());
    const double x = v.get<double>();
    if (!std::isfinite(x)) fail(path + " must be a finite number, got " + v.dump());
    const bool positive = rule == Rule::positive;
    if (positive ? !(x > 0) : !(x >= 0))
      fail(path + " must be " + (positive ? "positive" : "non-negative") + ", got " + v.dump());
    return x;
  }

  // A parameter that must be present.
  double number(const json& obj, const std::string& key, const std::string& path,
                Rule rule) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail("missing parameter " + path);
    return value(*it, path, rule);
  }

  // A parameter that may be absent (then `fallback`).
  double optional(const json& obj, const std::string& key, const std::string& path, Rule rule,
                  double fallback) const {
    const auto it = obj.find(key);
    return it == obj.end() ? fallback : value(*it, path, rule);
  }

  void only_keys(const json& obj, std::initializer_list<std::string_view> allowed,
                 const std::string& where, const std::string& hint = "") const {
    for (const auto& [key, v] : obj.items()) {
      bool known = false;
      for (std::string_view a : allowed) known = known || key == a;
      if (!known) fail("unknown " + where + " '" + key + "'" + hint);
    }
  }

  const json& object(const json& root, const std::string& key, const std::string& path,
                     const std::string& what) const {
    const auto it = root.find(key);
    if (it == root.end()) fail("missing " + what + " " + path);
    if (!it->is_object()) fail(path + " must be an object");
    return *it;
  }

  double bwurate(const json& link, const std::string& cls) const {
    const double b = optional(link, "bwurate", cls + ".bwurate", Rule::positive, 1.0);
    if (b > 1) fail(cls + ".bwurate must be in (0, 1], got " + link.at("bwurate").dump());
    return b;
  }

  MovedBy moved_by(const json& link, const std::string& cls) const {
    const auto it = link.find("moved_by");
    if (it == link.end() || *it == "network") return MovedBy::network;
    if (*it == "receiver") return MovedBy::receiver;
    fail(cls + ".moved_by must be \"network\" or \"receiver\", got " + it->dump());
  }

  Links links(const json& link, const std::string& cls) const {
    const auto it = link.find("links");
    if (it == link.end() || *it == "per_rank") return Links::per_rank;
    if (*it != "per_node_pair")
      fail(cls + ".links must be \"per_rank\" or \"per_node_pair\", got " + it->dump());
    if (cls != "inter_node")  // a node pair within one node is the node itself
      fail(cls + ".links must be \"per_rank\": only inter_node may be \"per_node_pair\"");
    return Links::per_node_pair;
  }

  // Version 1: the five constants, all required.
  LinkParams link_v1(const json& root, const std::string& cls) const {
    const json& it = object(root, cls, cls, "link class");
    only_keys(it, {"bandwidth", "bwurate", "link_delay", "start_lat", "sync_lat"},
              "parameter in " + cls);
    LinkParams p;
    p.bandwidth = number(it, "bandwidth", cls + ".bandwidth", Rule::positive);
    if (!it.contains("bwurate")) fail("missing parameter " + cls + ".bwurate");
    p.bwurate = bwurate(it, cls);
    p.link_delay = number(it, "link_delay", cls + ".link_delay", Rule::non_negative);
    p.start_lat = number(it, "start_lat", cls + ".start_lat", Rule::non_negative);
    p.sync_lat = number(it, "sync_lat", cls + ".sync_lat", Rule::non_negative);
    return p;
  }

  // {"one_way": x, "both_ways": y} of non-negative numbers, or of [bytes, seconds] lists.
  void check_directions(const json& v, const std::string& path, bool lists) const {
    if (!v.is_object()) fail(path + " must be an object with one_way and/or both_ways");
    only_keys(v, {"one_way", "both_ways", "one_way_input", "both_ways_input"},
              "direction in " + path);
    for (const auto& [key, x] : v.items()) {
      if (lists) check_points(x, path + "." + key);
      else value(x, path + "." + key, Rule::non_negative);
    }
  }

  // Measured points: a list of [bytes, seconds].
  void check_points(const json& v, const std::string& path) const {
    if (!v.is_array()) fail(path + " must be a list of [bytes, seconds]");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      if (!v[i].is_array() || v[i].size() != 2) fail(at + " must be [bytes, seconds]");
      value(v[i][0], at + "[0]", Rule::non_negative);
      value(v[i][1], at + "[1]", Rule::non_negative);
    }
  }

  const json& bands_of(const json& obj, const std::string& path) const {
    const auto it = obj.find("bands");
    if (it == obj.end()) fail("missing " + path + ".bands");
    if (!it->is_array() || it->empty()) fail(path + ".bands must be a non-empty list");
    return *it;
  }

  // The size of band i, which must exceed the band before it.
  double band_bytes(const json& band, const std::string& path, const SizeCurve& so_far) const {
    if (!band.is_object()) fail(path + " must be an object");
    const double b = number(band, "bytes", path + ".bytes", Rule::positive);
    if (!so_far.empty() && !(b > so_far.bytes.back()))
      fail(path + ".bytes must exceed the band before it (" + std::to_string(so_far.bytes.back()) +
           "), got " + band.at("bytes").dump());
    return b;
  }

  // Appends a band's point (bytes, and a bandwidth in bytes/s times bwurate) to a curve.
  static void add_point(SizeCurve& curve, double bytes, double bandwidth, double bwurate) {
    curve.bytes.push_back(bytes);
    curve.seconds.push_back(bytes / (bandwidth * bwurate));
  }

  // The input curves' key (one_way_input, both_ways_input) must be in every band or in
  // none: a curve with holes would fall back to the written bytes' rate at some sizes.
  void input_key_everywhere(const json& bands, const std::string& cls, const char* key) const {
    const bool first = bands.front().is_object() && bands.front().contains(key);
    for (std::size_t i = 1; i < bands.size(); ++i)
      if (bands[i].is_object() && bands[i].contains(key) != first)
        fail(cls + ".bands[" + std::to_string(i) + "]." + key + ": must be in every band or in none");
  }

  // A link class's bands: per band the bandwidth one way and (optionally) both ways, in
  // bytes/s, times bwurate, for bytes written in the call and (optionally) for the
  // caller's input; turned into the port-time curves.
  void link_bands(const json& link, const std::string& cls, LinkParams& p) const {
    const json& bands = bands_of(link, cls);
    const std::pair<const char*, SizeCurve*> input_curves[] = {
        {"one_way_input", &p.one_way_input}, {"both_ways_input", &p.both_ways_input}};
    for (const auto& [key, curve] : input_curves) input_key_everywhere(bands, cls, key);
    for (std::size_t i = 0; i < bands.size(); ++i) {
      const std::string path = cls + ".bands[" + std::to_string(i) + "]";
      const json& band = bands[i];
      const double bytes = band_bytes(band, path, p.one_way);
      only_keys(band, {"bytes", "one_way", "both_ways", "one_way_input", "both_ways_input",
                       "spread", "points"},
                "key in " + path);
      const double one = number(band, "one_way", path + ".one_way", Rule::positive);
      const double both = optional(band, "both_ways", path + ".both_ways", Rule::positive, one);
      if (band.contains("spread")) check_directions(band.at("spread"), path + ".spread", false);
      if (band.contains("points")) check_directions(band.at("points"), path + ".points", true);
      add_point(p.one_way, bytes, one, p.bwurate);
      add_point(p.both_ways, bytes, both, p.bwurate);
      for (const auto& [key, curve] : input_curves)
        if (band.contains(key))
          add_point(*curve, bytes, number(band, key, path + "." + key, Rule::positive), p.bwurate);
    }
    p.bandwidth = bands.back().at("one_way").get<double>();  // the largest band's
  }

  // Version 2: latency, overhead, start_lat, sync_lat, and a constant bandwidth or bands.
  LinkParams link_v2(const json& root, const std::string& cls) const {
    const json& it = object(root, cls, cls, "link class");
    only_keys(it, {"link_delay", "overhead", "start_lat", "sync_lat", "bwurate", "bandwidth",
                   "bands", "spread", "moved_by", "links"},
              "parameter in " + cls);
    LinkParams p;
    p.link_delay = number(it, "link_delay", cls + ".link_delay", Rule::non_negative);
    p.overhead = optional(it, "overhead", cls + ".overhead", Rule::non_negative, 0.0);
    p.start_lat = number(it, "start_lat", cls + ".start_lat", Rule::non_negative);
    p.sync_lat = number(it, "sync_lat", cls + ".sync_lat", Rule::non_negative);
    p.bwurate = bwurate(it, cls);
    p.moved_by = moved_by(it, cls);
    p.links = links(it, cls);
    // Each value is checked before the two are: a bad bandwidth is named as such.
    if (it.contains("bandwidth"))
      p.bandwidth = number(it, "bandwidth", cls + ".bandwidth", Rule::positive);
    if (it.contains("bands")) link_bands(it, cls, p);
    if (it.contains("bandwidth") == it.contains("bands"))
      fail(cls + " needs exactly one of bandwidth (a constant) and bands");
    if (it.contains("spread")) {
      const json& s = object(it, "spread", cls + ".spread", "object");
      only_keys(s, {"link_delay", "overhead", "start_lat", "sync_lat"}, "key in " + cls + ".spread");
      for (const auto& [key, v] : s.items()) value(v, cls + ".spread." + key, Rule::non_negative);
    }
    return p;
  }

  // Version 2's reduce_rate and copy_rate: a constant (bytes/s), or {"bands": [...]} with
  // per band bytes, rate, and optionally spread and points. Returns the largest band's rate.
  double rate_v2(const json& root, const std::string& key, Rule rule, SizeCurve& curve) const {
    const json& v = root.at(key);
    if (!v.is_object()) return value(v, key, rule);
    only_keys(v, {"bands"}, "key in " + key);
    const json& bands = bands_of(v, key);
    for (std::size_t i = 0; i < bands.size(); ++i) {
      const std::string path = key + ".bands[" + std::to_string(i) + "]";
      const json& band = bands[i];
      const double bytes = band_bytes(band, path, curve);
      only_keys(band, {"bytes", "rate", "spread", "points"}, "key in " + path);
      const double rate = number(band, "rate", path + ".rate", Rule::positive);
      optional(band, "spread", path + ".spread", Rule::non_negative, 0.0);
      if (band.contains("points")) check_points(band.at("points"), path + ".points");
      curve.bytes.push_back(bytes);
      curve.seconds.push_back(bytes / rate);
    }
    return bands.back().at("rate").get<double>();
  }
};

// Metadata is free-form: a string is kept as it is, anything else as its JSON text.
std::string metadata(const json& root, const char* key) {
  const auto it = root.find(key);
  if (it == root.end()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

int version_of(const Reader& r, const json& root) {
  const auto it = root.find("version");
  if (it == root.end()) return 1;  // files written before versions existed
  if (!it->is_number_integer() || (*it != 1 && *it != 2))
    r.fail("unsupported version " + it->dump() + " (this build reads versions 1 and 2)");
  return it->get<int>();
}

Model parse_v1(const Reader& r, const json& root) {
  // Anything else at the top level would be a link class this model does not know.
  r.only_keys(root, {"version", "intra_node", "inter_node", "reduce_rate", "copy_rate", "source",
                     "fitted_on"},
              "key or link class", " (link classes: intra_node, inter_node)");
  Model m;
  m.intra_node = r.link_v1(root, "intra_node");
  m.inter_node = r.link_v1(root, "inter_node");
  m.reduce_rate = r.number(root, "reduce_rate", "reduce_rate", Rule::positive);
  m.copy_rate = r.optional(root, "copy_rate", "copy_rate", Rule::non_negative, 0.0);
  return m;
}

Model parse_v2(const Reader& r, const json& root) {
  r.only_keys(root, {"version", "intra_node", "inter_node", "reduce_rate", "copy_rate", "source",
                     "fitted_on"},
              "key or link class", " (link classes: intra_node, inter_node)");
  Model m;
  m.version = 2;
  m.intra_node = r.link_v2(root, "intra_node");
  m.inter_node = r.link_v2(root, "inter_node");
  if (!root.contains("reduce_rate")) r.fail("missing parameter reduce_rate");
  m.reduce_rate = r.rate_v2(root, "reduce_rate", Rule::positive, m.reduce_curve);
  if (root.contains("copy_rate"))
    m.copy_rate = r.rate_v2(root, "copy_rate", Rule::non_negative, m.copy_curve);
  return m;
}

}  // namespace

Model parse_model(std::string_view json_text, const std::string& origin) {
  const Reader r{origin};
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    r.fail(std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) r.fail("expected a JSON object");
  Model m = version_of(r, root) == 1 ? parse_v1(r, root) : parse_v2(r, root);
  m.source = metadata(root, "source");
  m.fitted_on = metadata(root, "fitted_on");
  return m;
}

Model load_model(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError("model file '" + path + "': is a directory");
  std::ifstream in(path);
  if (!in) throw UsageError("model file '" + path + "': cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw UsageError("model file '" + path + "': cannot be read");
  return parse_model(text.str(), path);
}

}  // namespace collscope
