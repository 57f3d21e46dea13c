// The report page's parts: escaping, the clustered class order, the events reader, thumbnails,
// and the page of a hand-made document (what the browser test sees on a real run).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "frugal/image/image.h"
#include "frugal/report/report.h"
#include "frugal/util/error.h"
#include "frugal/util/protobuf.h"

namespace frugal::report {
namespace {

TEST(Report, EscapesMarkupAndControlCharacters) {
  EXPECT_EQ(escape_html("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(escape_html("a&b\"c'd"), "a&amp;b&quot;c&#39;d");
  const std::string shown = escape_html("x\x1b[31m\xff");
  EXPECT_EQ(shown.find('\x1b'), std::string::npos);
  EXPECT_EQ(shown.find('\xff'), std::string::npos);
}

TEST(Report, ClusterOrderPutsConfusedClassesTogether) {
  // 0<->2 and 1<->3 are confused; 4 with nothing.
  const std::vector<std::vector<std::int64_t>> m = {
      {10, 0, 5, 0, 0}, {0, 10, 0, 3, 0}, {4, 0, 10, 0, 0}, {0, 2, 0, 10, 0}, {0, 0, 0, 0, 10}};
  const std::vector<int> order = cluster_order(m);
  ASSERT_EQ(order.size(), 5u);
  auto pos = [&](int c) { return std::find(order.begin(), order.end(), c) - order.begin(); };
  EXPECT_EQ(std::abs(pos(0) - pos(2)), 1);
  EXPECT_EQ(std::abs(pos(1) - pos(3)), 1);
  EXPECT_EQ(order.back(), 4);
  EXPECT_EQ(order, cluster_order(m));  // deterministic
  EXPECT_EQ(cluster_order({}), std::vector<int>{});
  EXPECT_EQ(cluster_order({{3, 0}, {0, 4}}), (std::vector<int>{0, 1}));
}

TEST(Report, MostConfusedSkipsTheDiagonalAndZeros) {
  const auto top = most_confused({1, 9, 0, 4, 4}, 1, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0], (std::pair<int, std::int64_t>{3, 4}));
  EXPECT_EQ(top[1], (std::pair<int, std::int64_t>{4, 4}));
  EXPECT_TRUE(most_confused({5, 0}, 0, 3).empty());
}

std::string record(const pb::Writer& ev) {
  std::string out;
  pb::append_fixed64(out, ev.data().size());
  pb::append_fixed32(out, 0);
  out += ev.data();
  pb::append_fixed32(out, 0);
  return out;
}

std::string scalar_event(double wall, std::int64_t step, const std::string& tag, float value) {
  pb::Writer v, summary, ev;
  v.string(1, tag);
  v.float32(2, value);
  summary.message(1, v);
  ev.float64(1, wall);
  ev.int64(2, step);
  ev.message(5, summary);
  return record(ev);
}

TEST(Report, ReadsEventsScalarsAndStopsAtATruncatedRecord) {
  pb::Writer first;
  first.float64(1, 100.0);
  first.string(3, "brain.Event:2");
  std::string bytes =
      record(first) + scalar_event(101.5, 8, "val/loss", 0.5f) + scalar_event(103, 16, "val/loss", 0.25f);
  const std::string whole = bytes;
  bytes += scalar_event(104, 24, "val/loss", 0.125f).substr(0, 20);
  const nlohmann::json s = read_events(bytes);
  EXPECT_EQ(s["start"], 100.0);
  EXPECT_EQ(s["end"], 103.0);
  EXPECT_EQ(s["first_step"], 8);
  EXPECT_EQ(s["last_step"], 16);
  ASSERT_EQ(s["scalars"]["val/loss"].size(), 2u);
  EXPECT_EQ(s["scalars"]["val/loss"][1], (nlohmann::json{16, 103.0, 0.25}));
  EXPECT_EQ(read_events(whole), s);
  EXPECT_TRUE(read_events("garbage").at("scalars").empty());
}

TEST(Report, ThumbnailIsASmallJpegDataUri) {
  Image img;
  img.resize(300, 150, 3);
  for (std::size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<std::uint8_t>(i * 7);
  const std::vector<std::uint8_t> png = encode_png(img);
  const std::string uri = thumbnail_data_uri(png, 64, "x.png");
  ASSERT_EQ(uri.rfind("data:image/jpeg;base64,", 0), 0u);
  EXPECT_LT(uri.size(), 12000u);
  const std::vector<std::uint8_t> junk = {1, 2, 3, 4};
  EXPECT_THROW(thumbnail_data_uri(junk, 64, "junk.png"), Error);
}

nlohmann::json sample_doc() {
  const std::string crafted = "<script>alert(1)</script>";
  nlohmann::json doc = {{"run", "runs/a"}, {"generated", "2026-12-07 12:00:00 UTC"}};
  doc["config"] = {{"format", "frugal-run-config"}, {"model", "cnn"}, {"classes", {"cat", crafted, "dog"}}};
  doc["metrics"] = {
      {{"epoch", 1}, {"step", 8}, {"train_loss", 1.2}, {"val_loss", 1.0}, {"val_accuracy", 0.5}, {"lr", 0.001}},
      {{"epoch", 2}, {"step", 16}, {"train_loss", 0.8}, {"val_loss", 0.7}, {"val_accuracy", 0.75}, {"lr", 0.0005}}};
  doc["sessions"] = {{{"file", "events.out.tfevents.1.h.frugal"},
                      {"start", 1000.0},
                      {"end", 1100.0},
                      {"first_step", 8},
                      {"last_step", 16},
                      {"scalars", {{"val/loss", {{8, 1050.0, 1.0}, {16, 1100.0, 0.7}}}}}}};
  doc["eval"] = {{"data", "data.zip"},
                 {"samples", 12},
                 {"accuracy", 0.75},
                 {"loss", 0.7},
                 {"classes", {"cat", crafted, "dog"}},
                 {"confusion", {{3, 1, 0}, {0, 4, 0}, {1, 1, 2}}}};
  doc["eval"]["per_class"] = {{{"class", "cat"}, {"precision", 0.75}, {"recall", 0.75}, {"f1", 0.75}, {"support", 4}},
                              {{"class", crafted}, {"precision", 0.666}, {"recall", 1.0}, {"f1", 0.8}, {"support", 4}},
                              {{"class", "dog"}, {"precision", 1.0}, {"recall", 0.5}, {"f1", 0.666}, {"support", 4}}};
  doc["eval"]["worst"] = {{{"name", "dog/<b>1.png"},
                           {"true", "dog"},
                           {"predicted", crafted},
                           {"probability", 0.9},
                           {"loss", 2.3},
                           {"thumbnail", "data:image/jpeg;base64,AAAA"}},
                          {{"name", "dog/2.png"},
                           {"true", "dog"},
                           {"predicted", "cat"},
                           {"probability", 0.8},
                           {"loss", 1.6},
                           {"thumbnail", "javascript:alert(1)"}}};
  return doc;
}

TEST(Report, PageIsSelfContainedAndEscapesNamesFromData) {
  const std::string page = render_report(sample_doc());
  EXPECT_NE(page.find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("javascript:"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("dog/&lt;b&gt;1.png"), std::string::npos);
  for (const char* id : {"chart-loss", "chart-accuracy", "chart-lr", "chart-wall", "confusion-normalised",
                         "confusion-raw", "per-class-table", "confused-pairs", "worst", "options"})
    EXPECT_NE(page.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(page.find("<img class=\"thumb\" src=\"data:image/jpeg;base64,AAAA\""), std::string::npos);
  EXPECT_NE(page.find("no image"), std::string::npos);  // the javascript: URI was not used
}

TEST(Report, PageOfAnOddDocumentLeavesPartsOff) {
  for (const nlohmann::json& doc :
       {nlohmann::json::object(), nlohmann::json::array(),
        nlohmann::json({{"eval", 3}, {"metrics", "x"}, {"sessions", {1, 2}}}),
        nlohmann::json({{"eval", {{"classes", {"a", "b"}}, {"confusion", {{1, 2}}}, {"worst", {1}}}}})}) {
    const std::string page = render_report(doc);
    EXPECT_NE(page.find("</html>"), std::string::npos);
    EXPECT_EQ(page.find("confusion-raw"), std::string::npos);
  }
}

// The text between `open` (e.g. `id="chart-lr"`) and the next "</figure>".
std::string figure(const std::string& page, const std::string& open) {
  const auto a = page.find(open);
  if (a == std::string::npos) return "";
  return page.substr(a, page.find("</figure>", a) - a);
}

// The points of the first polyline in `svg`.
int polyline_points(const std::string& svg) {
  const auto a = svg.find("<polyline class=\"series\"");
  if (a == std::string::npos) return 0;
  const auto p = svg.find("points=\"", a) + 8;
  const std::string pts = svg.substr(p, svg.find('"', p) - p);
  int n = 0;
  for (char c : pts) n += c == ',';
  return n;
}

TEST(Report, LearningRateAndSpeedUseTheFinePointsOverTheEpochs) {
  nlohmann::json doc = sample_doc();  // "lr" on 2 epochs
  nlohmann::json lr = nlohmann::json::array(), speed = nlohmann::json::array(), steps = nlohmann::json::array(),
                 time = nlohmann::json::array();
  for (int s = 1; s <= 8; ++s) {
    steps.push_back(s);
    time.push_back(1000.0 + s);
    lr.push_back(0.001 * s);
    speed.push_back(100.0 + s);
  }
  doc["metrics"][0]["version"] = 2;
  doc["metrics"][0]["train_points"] = {
      {"step", steps}, {"time", time}, {"train/lr", lr}, {"train/images_per_s", speed}};
  // Steps 9 and 10 after the last record: in the events only.
  doc["sessions"][0]["scalars"]["train/lr"] = {{9, 1109.0, 0.009}, {10, 1110.0, 0.01}};
  doc["sessions"][0]["scalars"]["train/images_per_s"] = {{9, 1109.0, 109.0}, {10, 1110.0, 110.0}};
  const std::string page = render_report(doc);
  EXPECT_EQ(polyline_points(figure(page, "id=\"chart-lr\"")), 10);
  EXPECT_EQ(polyline_points(figure(page, "id=\"chart-speed\"")), 10);
  // Without fine points, the epochs' "lr".
  EXPECT_EQ(polyline_points(figure(render_report(sample_doc()), "id=\"chart-lr\"")), 2);
}

TEST(Report, SessionsCutOrKilledAreMarked) {
  nlohmann::json doc = sample_doc();
  auto session = [](double start, double end, int first, int last, int end_code) {
    nlohmann::json s = {{"file", "events.out.tfevents." + std::to_string(static_cast<int>(start)) + ".h.frugal"},
                        {"start", start},
                        {"end", end},
                        {"first_step", first},
                        {"last_step", last},
                        {"scalars", {{"val/loss", {{first, start + 1, 1.0}, {last, end, 0.9}}}}}};
    if (end_code >= 0) s["scalars"]["session/end"] = {{last, end, end_code}};
    return s;
  };
  // Session 1 cut by its deadline (1) at step 12; session 2 killed (no session/end); session 3 done (0).
  doc["sessions"] = {session(1000, 1100, 1, 12, 1), session(2000, 2100, 9, 14, -1), session(3000, 3100, 13, 16, 0)};
  const std::string page = render_report(doc);
  const std::string loss = figure(page, "id=\"chart-loss\"");
  EXPECT_NE(loss.find("<title>session 1 cut at step 12: deadline</title>"), std::string::npos) << loss;
  EXPECT_NE(loss.find("<line class=\"mark cut\""), std::string::npos);
  EXPECT_NE(loss.find("<title>session 2 killed (no end recorded) after step 14</title>"), std::string::npos);
  EXPECT_NE(loss.find("<title>session 3 starts</title>"), std::string::npos);
  EXPECT_EQ(loss.find("session 3 cut"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"ended\">cut at step 12: deadline</td>"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"ended\">done at step 16</td>"), std::string::npos);
  // A run of an earlier frugal records no ends: no session is called killed.
  doc["sessions"] = {session(1000, 1100, 1, 12, -1), session(2000, 2100, 9, 14, -1)};
  EXPECT_EQ(render_report(doc).find("killed (no end"), std::string::npos);
}

TEST(Report, MultiLabelRunShowsEachTagsApAndThreshold) {
  nlohmann::json doc = sample_doc();
  const std::string crafted = "<script>alert(1)</script>";
  doc["eval"] = {
      {"multi_label", true},     {"mean_ap", 0.8}, {"f1", 0.7},     {"precision", 0.75},  {"recall", 0.65},
      {"exact_match", 0.5},      {"loss", 0.3},    {"samples", 20}, {"data", "tags.zip"}, {"classes", {"sky", crafted}},
      {"thresholds", {0.4, 0.6}}};
  doc["eval"]["per_class"] = {
      {"sky",
       {{"ap", 0.9}, {"precision", 0.8}, {"recall", 0.7}, {"f1", 0.75}, {"positives", 9}, {"best_threshold", 0.35}}},
      {crafted,
       {{"ap", 0.7}, {"precision", nullptr}, {"recall", 0.0}, {"f1", 0.0}, {"positives", 3}, {"best_threshold", 0.5}}}};
  const std::string page = render_report(doc);
  EXPECT_NE(page.find("id=\"per-tag-table\""), std::string::npos);
  EXPECT_NE(page.find("<tr><td>sky</td><td>90.00%</td><td>80.00%</td><td>70.00%</td><td>75.00%</td><td>9</td>"
                      "<td>0.4</td><td>0.35</td></tr>"),
            std::string::npos);
  EXPECT_NE(page.find("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td><td>70.00%</td><td>-</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>0.6</td><td>0.5</td>"), std::string::npos);
  EXPECT_NE(page.find("mean AP <b>80.00%</b>"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("confusion-raw"), std::string::npos);
}

TEST(Report, TrainingAccuracyIsDrawnBesideValidationsWhenTheRunCountedIt) {
  nlohmann::json doc = sample_doc();
  doc["metrics"][0]["train_accuracy"] = 0.4;
  doc["metrics"][1]["train_accuracy"] = 0.625;
  const std::string page = render_report(doc);
  const auto chart = page.find("id=\"chart-accuracy\"");
  ASSERT_NE(chart, std::string::npos);
  const std::string accuracy = page.substr(chart, page.find("</figure>", chart) - chart);
  EXPECT_NE(accuracy.find("train accuracy (epoch mean)"), std::string::npos);
  EXPECT_NE(accuracy.find("validation accuracy"), std::string::npos);
  EXPECT_EQ(page.find("Training accuracy is not recorded"), std::string::npos);
}

TEST(Report, FactsNameTheTrainingSkipsAndSayTrainingAccuracyIsNotRecorded) {
  nlohmann::json doc = sample_doc();
  doc["metrics"][1]["train_skipped"] = {{"undecodable", 2}, {"empty file", 1}};
  const std::string page = render_report(doc);
  EXPECT_NE(page.find("<th>training files left out</th><td>empty file: 1, undecodable: 2</td>"), std::string::npos);
  EXPECT_NE(page.find("Training accuracy is not recorded"), std::string::npos);
  EXPECT_NE(render_report(sample_doc()).find("<th>training files left out</th><td>not recorded by this run</td>"),
            std::string::npos);
}

}  // namespace
}  // namespace frugal::report
