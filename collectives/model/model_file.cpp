// The model file (MODEL.md): JSON with the two link classes, reduce_rate, an optional
// copy_rate and free-form metadata. Every problem is one UsageError line that names the
// file and the parameter.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "collscope/errors.hpp"
#include "collscope/model.hpp"

namespace collscope {
namespace {

using nlohmann::json;

struct Reader {
  std::string origin;

  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError("model file '" + origin + "': " + what);
  }

  // A parameter that must be present and a finite number; `positive` excludes 0.
  double number(const json& obj, const std::string& key, const std::string& path,
                bool positive) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail("missing parameter " + path);
    if (!it->is_number()) fail(path + " must be a number, got " + it->dump());
    const double v = it->get<double>();
    if (!std::isfinite(v)) fail(path + " must be a finite number, got " + it->dump());
    if (positive ? !(v > 0) : !(v >= 0))
      fail(path + " must be " + (positive ? "positive" : "non-negative") + ", got " +
           it->dump());
    return v;
  }

  void only_keys(const json& obj, std::initializer_list<std::string_view> allowed,
                 const std::string& where, const std::string& hint = "") const {
    for (const auto& [key, value] : obj.items()) {
      bool known = false;
      for (std::string_view a : allowed) known = known || key == a;
      if (!known) fail("unknown " + where + " '" + key + "'" + hint);
    }
  }

  LinkParams link(const json& root, const std::string& cls) const {
    const auto it = root.find(cls);
    if (it == root.end()) fail("missing link class " + cls);
    if (!it->is_object()) fail(cls + " must be an object of parameters");
    only_keys(*it, {"bandwidth", "bwurate", "link_delay", "start_lat", "sync_lat"},
              "parameter in " + cls);
    LinkParams p;
    p.bandwidth = number(*it, "bandwidth", cls + ".bandwidth", true);
    p.bwurate = number(*it, "bwurate", cls + ".bwurate", true);
    if (p.bwurate > 1) fail(cls + ".bwurate must be in (0, 1], got " + it->at("bwurate").dump());
    p.link_delay = number(*it, "link_delay", cls + ".link_delay", false);
    p.start_lat = number(*it, "start_lat", cls + ".start_lat", false);
    p.sync_lat = number(*it, "sync_lat", cls + ".sync_lat", false);
    return p;
  }
};

// Metadata is free-form: a string is kept as it is, anything else as its JSON text.
std::string metadata(const json& root, const char* key) {
  const auto it = root.find(key);
  if (it == root.end()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
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
  // Anything else at the top level would be a link class this model does not know.
  r.only_keys(root, {"intra_node", "inter_node", "reduce_rate", "copy_rate", "source",
                     "fitted_on"},
              "key or link class", " (link classes: intra_node, inter_node)");
  Model m;
  m.intra_node = r.link(root, "intra_node");
  m.inter_node = r.link(root, "inter_node");
  m.reduce_rate = r.number(root, "reduce_rate", "reduce_rate", true);
  if (root.contains("copy_rate")) m.copy_rate = r.number(root, "copy_rate", "copy_rate", false);
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
