// The model file, version 2 (MODEL.md, "The model file"): every parameter and band read
// where it belongs, costs by size between and beyond the bands, version 1 files read as
// one band, and every problem refused with one line naming the file and the parameter.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "collscope/errors.hpp"
#include "collscope/model.hpp"

namespace collscope {
namespace {

// Two bands per link class: 1 KiB at 1e9 B/s one way (1.024 us), 0.5e9 both ways; 1 MiB
// at 4e9 one way (262.144 us), 2e9 both ways. inter_node: a constant bandwidth.
const char* kV2 = R"({
  "version": 2,
  "source": "hand", "fitted_on": {"host": "x"},
  "intra_node": {
    "link_delay": 1e-6, "overhead": 2e-7, "start_lat": 3e-6, "sync_lat": 4e-6,
    "moved_by": "receiver",
    "spread": {"link_delay": 0.1, "overhead": 0.2},
    "bands": [
      {"bytes": 1024, "one_way": 1e9, "both_ways": 0.5e9,
       "spread": {"one_way": 0.01, "both_ways": 0.02},
       "points": {"one_way": [[1024, 2.1e-6], [1024, 2.2e-6]], "both_ways": []}},
      {"bytes": 1048576, "one_way": 4e9, "both_ways": 2e9}
    ]
  },
  "inter_node": {"link_delay": 5e-6, "start_lat": 0, "sync_lat": 0, "bandwidth": 1e9,
                 "bwurate": 0.5, "links": "per_node_pair"},
  "reduce_rate": {"bands": [{"bytes": 1000, "rate": 1e10, "spread": 0.05,
                             "points": [[1000, 1e-7]]},
                            {"bytes": 1000000, "rate": 1e9}]},
  "copy_rate": 2e10
})";

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// The error of loading kV2 with `from` replaced by `to`, or "" when it loads.
std::string load_error(const std::string& from, const std::string& to) {
  std::string text = kV2;
  const std::size_t at = text.find(from);
  if (at == std::string::npos) return "test bug: '" + from + "' not in the model";
  text.replace(at, from.size(), to);
  try {
    load_model(write_temp("bad_v2.json", text));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelFileV2, LoadsEveryParameterAndBand) {
  const Model m = load_model(write_temp("v2.json", kV2));
  EXPECT_EQ(m.version, 2);
  EXPECT_EQ(m.intra_node.link_delay, 1e-6);
  EXPECT_EQ(m.intra_node.overhead, 2e-7);
  EXPECT_EQ(m.intra_node.start_lat, 3e-6);
  EXPECT_EQ(m.intra_node.sync_lat, 4e-6);
  EXPECT_EQ(m.intra_node.bandwidth, 4e9);  // the largest band's
  ASSERT_EQ(m.intra_node.one_way.bytes.size(), 2u);
  EXPECT_DOUBLE_EQ(m.intra_node.one_way.seconds[0], 1024 / 1e9);
  EXPECT_DOUBLE_EQ(m.intra_node.both_ways.seconds[1], 1048576 / 2e9);
  EXPECT_EQ(m.intra_node.moved_by, MovedBy::receiver);
  EXPECT_EQ(m.inter_node.moved_by, MovedBy::network);  // optional
  EXPECT_EQ(m.intra_node.links, Links::per_rank);        // optional
  EXPECT_EQ(m.inter_node.links, Links::per_node_pair);
  EXPECT_EQ(m.inter_node.overhead, 0);  // optional
  EXPECT_EQ(m.inter_node.achieved_bandwidth(), 0.5e9);
  EXPECT_TRUE(m.inter_node.one_way.empty());
  EXPECT_EQ(m.reduce_rate, 1e9);  // the largest band's
  EXPECT_DOUBLE_EQ(m.reduce_seconds(1000), 1e-7);
  EXPECT_EQ(m.copy_rate, 2e10);
  EXPECT_TRUE(m.copy_curve.empty());
  EXPECT_EQ(m.source, "hand");
}

TEST(ModelFileV2, BothWaysDefaultsToOneWay) {
  const std::string text = std::string(kV2).replace(std::string(kV2).find(", \"both_ways\": 2e9"),
                                                    18, "");
  const Model m = parse_model(text, "m.json");
  EXPECT_DOUBLE_EQ(m.intra_node.both_ways.seconds[1], m.intra_node.one_way.seconds[1]);
}

// Between two bands the port time is linear in the size; beyond them, proportional.
TEST(ModelFileV2, PortTimeBetweenAndBeyondTheBands) {
  const LinkParams& p = parse_model(kV2, "m.json").intra_node;
  const double t1k = 1024 / 1e9, t1m = 1048576 / 4e9;
  EXPECT_DOUBLE_EQ(p.port_seconds(1024, false), t1k);
  EXPECT_DOUBLE_EQ(p.port_seconds(512, false), t1k / 2);
  EXPECT_DOUBLE_EQ(p.port_seconds(4 * 1048576.0, false), 4 * t1m);
  const double mid = (1024 + 1048576) / 2.0;
  EXPECT_DOUBLE_EQ(p.port_seconds(mid, false), (t1k + t1m) / 2);
  EXPECT_DOUBLE_EQ(p.port_seconds(mid, true), (1024 / 0.5e9 + 1048576 / 2e9) / 2);
  EXPECT_EQ(p.port_seconds(0, true), 0);
}

// The input curves: read where a band has them, used for a message from the caller's
// input only; without them such a message costs what written bytes cost.
TEST(ModelFileV2, InputCurvesPriceMessagesFromTheInput) {
  std::string text = kV2;
  auto add = [&](const std::string& at, const std::string& keys) {
    text.replace(text.find(at), at.size(), at + keys);
  };
  add("\"one_way\": 1e9, \"both_ways\": 0.5e9", ", \"one_way_input\": 2e9, \"both_ways_input\": 1e9");
  add("\"one_way\": 4e9, \"both_ways\": 2e9", ", \"one_way_input\": 8e9, \"both_ways_input\": 5e9");
  const LinkParams with = parse_model(text, "m.json").intra_node;
  ASSERT_EQ(with.one_way_input.bytes.size(), 2u);
  EXPECT_DOUBLE_EQ(with.port_seconds(1024, false, 0, true), 1024 / 2e9);
  EXPECT_DOUBLE_EQ(with.port_seconds(1048576, true, 0, true), 1048576 / 5e9);
  EXPECT_DOUBLE_EQ(with.port_seconds(1048576, false, 0, false), 1048576 / 4e9);  // written
  EXPECT_DOUBLE_EQ(with.port_seconds(1048576, true, 0, false), 1048576 / 2e9);
  const LinkParams without = parse_model(kV2, "m.json").intra_node;
  EXPECT_TRUE(without.one_way_input.empty());
  EXPECT_DOUBLE_EQ(without.port_seconds(1048576, true, 0, true), 1048576 / 2e9);
  EXPECT_DOUBLE_EQ(without.port_seconds(1048576, false, 0, true), 1048576 / 4e9);
}

TEST(ModelFileV2, AVersionOneFileIsOneBand) {
  const Model m = parse_model(R"({"reduce_rate": 4e9, "copy_rate": 0,
      "intra_node": {"bandwidth": 2e9, "bwurate": 0.5, "link_delay": 2e-6, "start_lat": 0,
                     "sync_lat": 0},
      "inter_node": {"bandwidth": 1e9, "bwurate": 1, "link_delay": 0, "start_lat": 0,
                     "sync_lat": 0}})",
                              "v1.json");
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.intra_node.overhead, 0);
  for (double b : {1.0, 1e3, 1e9}) {
    EXPECT_DOUBLE_EQ(m.intra_node.port_seconds(b, false), b / 1e9);
    EXPECT_DOUBLE_EQ(m.intra_node.port_seconds(b, true), b / 1e9);
    EXPECT_DOUBLE_EQ(m.reduce_seconds(b), b / 4e9);
    EXPECT_EQ(m.copy_seconds(b), 0);
  }
}

TEST(ModelFileV2, TheExampleIsVersionTwo) {
  const Model m = load_model(COLLSCOPE_SOURCE_DIR "/collectives/model/example.json");
  EXPECT_EQ(m.version, 2);
  EXPECT_FALSE(m.intra_node.one_way.empty());
  EXPECT_GT(m.intra_node.overhead, 0);
  // Slower both ways than one way, and across nodes than within one.
  EXPECT_GT(m.intra_node.port_seconds(1e8, true), m.intra_node.port_seconds(1e8, false));
  EXPECT_GT(m.inter_node.port_seconds(1e8, false), m.intra_node.port_seconds(1e8, false));
}

TEST(ModelFileV2, EveryProblemIsOneLineNamingFileAndParameter) {
  const struct {
    std::string from, to, says;
  } cases[] = {
      {"\"version\": 2", "\"version\": 3", "unsupported version 3"},
      {"\"version\": 2", "\"version\": \"2\"", "unsupported version \"2\""},
      {"\"version\": 2", "\"version\": 2.5", "unsupported version 2.5"},
      {"\"overhead\": 2e-7", "\"overhead\": -1", "intra_node.overhead must be non-negative"},
      {"\"link_delay\": 1e-6, ", "", "missing parameter intra_node.link_delay"},
      {"\"receiver\"", "\"cpu\"", "intra_node.moved_by must be \"network\" or \"receiver\", got \"cpu\""},
      {"\"per_node_pair\"", "\"per_host\"",
       "inter_node.links must be \"per_rank\" or \"per_node_pair\", got \"per_host\""},
      {"\"moved_by\": \"receiver\"", "\"links\": \"per_node_pair\"",
       "intra_node.links must be \"per_rank\": only inter_node may be \"per_node_pair\""},
      {"\"bytes\": 1048576", "\"bytes\": 1024", "intra_node.bands[1].bytes must exceed"},
      {"\"bytes\": 1048576", "\"bytes\": 0", "intra_node.bands[1].bytes must be positive"},
      {"\"one_way\": 4e9", "\"one_way\": 0", "intra_node.bands[1].one_way must be positive"},
      {"\"both_ways\": 2e9", "\"both_ways\": null", "intra_node.bands[1].both_ways must be a number"},
      {"\"both_ways\": 2e9", "\"other_way\": 2e9", "unknown key in intra_node.bands[1] 'other_way'"},
      {"\"both_ways\": 2e9", "\"both_ways\": 2e9, \"one_way_input\": 5e9",
       "intra_node.bands[1].one_way_input: must be in every band or in none"},
      {"\"both_ways\": 0.5e9,", "\"both_ways\": 0.5e9, \"both_ways_input\": 1e9,",
       "intra_node.bands[1].both_ways_input: must be in every band or in none"},
      {"\"bandwidth\": 1e9,", "\"bands\": [{\"bytes\": 1, \"one_way\": 1, \"one_way_input\": 0}],",
       "inter_node.bands[0].one_way_input must be positive"},
      {"\"one_way\": 0.01", "\"one_way\": -0.01", "intra_node.bands[0].spread.one_way must be non-negative"},
      {"[[1024, 2.1e-6], [1024, 2.2e-6]]", "[[1024]]", "intra_node.bands[0].points.one_way[0] must be [bytes, seconds]"},
      {"\"both_ways\": []", "\"sideways\": []", "unknown direction in intra_node.bands[0].points 'sideways'"},
      {"\"link_delay\": 0.1", "\"latency\": 0.1", "unknown key in intra_node.spread 'latency'"},
      {"\"bandwidth\": 1e9,", "", "inter_node needs exactly one of bandwidth (a constant) and bands"},
      {"\"bandwidth\": 1e9,", "\"bandwidth\": 1e9, \"bands\": [{\"bytes\": 1, \"one_way\": 1}],",
       "inter_node needs exactly one"},
      {"\"bandwidth\": 1e9,", "\"bandwidth\": -1, \"bands\": [{\"bytes\": 1, \"one_way\": 1}],",
       "inter_node.bandwidth must be positive, got -1"},
      {"\"bandwidth\": 1e9,", "\"bands\": [],", "inter_node.bands must be a non-empty list"},
      {"\"bwurate\": 0.5", "\"bwurate\": 2", "inter_node.bwurate must be in (0, 1]"},
      {"\"rate\": 1e9", "\"rate\": 0", "reduce_rate.bands[1].rate must be positive"},
      {"{\"bands\": [{\"bytes\": 1000,", "{\"bands\": [], \"x\": [{\"bytes\": 1000,",
       "unknown key in reduce_rate 'x'"},
      {"\"copy_rate\": 2e10", "\"copy_rate\": {\"bands\": []}", "copy_rate.bands must be a non-empty list"},
      {"\"copy_rate\": 2e10", "\"copy_rate\": -1", "copy_rate must be non-negative"},
      {"\"bands\": [\n      {", "\"bands\": [\n      5, {", "intra_node.bands[0] must be an object"},
  };
  for (const auto& c : cases) {
    const std::string error = load_error(c.from, c.to);
    EXPECT_NE(error.find("bad_v2.json"), std::string::npos) << c.says << ": " << error;
    EXPECT_NE(error.find(c.says), std::string::npos) << c.says << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_EQ(load_error("\"source\": \"hand\"", "\"source\": [1, 2]"), "");  // free-form
}

TEST(SizeCurve, LinearBetweenProportionalBeyond) {
  const SizeCurve c{{100, 200, 400}, {1.0, 3.0, 4.0}};
  EXPECT_DOUBLE_EQ(c.seconds_for(50), 0.5);
  EXPECT_DOUBLE_EQ(c.seconds_for(100), 1.0);
  EXPECT_DOUBLE_EQ(c.seconds_for(150), 2.0);
  EXPECT_DOUBLE_EQ(c.seconds_for(300), 3.5);
  EXPECT_DOUBLE_EQ(c.seconds_for(400), 4.0);
  EXPECT_DOUBLE_EQ(c.seconds_for(800), 8.0);
  EXPECT_EQ(c.seconds_for(0), 0);
  const SizeCurve one{{1000}, {2.0}};  // one band: a constant rate
  EXPECT_DOUBLE_EQ(one.seconds_for(10), 0.02);
  EXPECT_DOUBLE_EQ(one.seconds_for(1e6), 2000.0);
  EXPECT_EQ(SizeCurve{}.seconds_for(5), 0);
}

}  // namespace
}  // namespace collscope
