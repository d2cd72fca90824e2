// Tests for the run outputs: progress bar, JSONL metrics, summary JSON, SVG plot, seed log.
#include <gtest/gtest.h>
#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/resource.h>

#include "common/check.h"
#include "common/half.h"
#include "run/metrics_log.h"
#include "run/progress_bar.h"
#include "run/seed_log.h"
#include "run/summary.h"
#include "run/svg_plot.h"
#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::occurrences;
using smezo_test::read_file;
using smezo_test::write_file;
using testing::HasSubstr;

namespace {

// A FILE* that writes into memory; text() returns what was written so far.
struct MemFile {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  ~MemFile() {
    std::fclose(f);
    std::free(buf);
  }
  std::string text() {
    std::fflush(f);
    return std::string(buf, len);
  }
};

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  return names;
}

}  // namespace

// --- progress bar

TEST(ProgressBar, FormatsHms) {
  EXPECT_EQ(smezo::progress_format_hms(0), "0:00:00");
  EXPECT_EQ(smezo::progress_format_hms(3725), "1:02:05");
  EXPECT_EQ(smezo::progress_format_hms(59.6), "0:01:00");
  EXPECT_EQ(smezo::progress_format_hms(360000), "100:00:00");
  EXPECT_EQ(smezo::progress_format_hms(-1), "-:--:--");
  EXPECT_EQ(smezo::progress_format_hms(NAN), "-:--:--");
}

TEST(ProgressBar, PlainModeLinesEtaAndDevAccuracy) {
  MemFile mem;
  double t = 100.0;  // fake clock
  smezo::ProgressOptions opt;
  opt.total_steps = 100;
  opt.out = mem.f;
  opt.tty = 0;
  opt.plain_every = 10;
  opt.clock = [&t] { return t; };
  smezo::ProgressBar bar(opt);
  for (int step = 1; step <= 50; ++step) {
    t = 100.0 + 0.5 * step;  // 2 steps/s
    bar.update(step, 2.0);
  }
  EXPECT_DOUBLE_EQ(bar.steps_per_second(), 2.0);
  EXPECT_DOUBLE_EQ(bar.eta_seconds(), 25.0);
  EXPECT_NEAR(bar.smoothed_loss(), 2.0, 1e-12);  // bias-corrected EMA of a constant
  std::vector<std::string> lines = split_lines(mem.text());
  ASSERT_EQ(lines.size(), 5u);  // steps 10, 20, 30, 40, 50
  EXPECT_EQ(lines[4], "step 50/100 50.0% | loss 2.0000 (last 2.0000) | 2.00 steps/s | "
                      "ETA 0:00:25 | dev acc -");
  EXPECT_THAT(lines[0], HasSubstr("step 10/100 10.0%"));
  EXPECT_THAT(lines[0], HasSubstr("ETA 0:00:45"));

  bar.set_dev_accuracy(0.8123, 50);
  for (int step = 51; step <= 100; ++step) {
    t = 100.0 + 0.5 * step;
    bar.update(step, step == 60 ? NAN : 2.0);
  }
  bar.finish();
  bar.finish();  // idempotent
  lines = split_lines(mem.text());
  ASSERT_EQ(lines.size(), 10u);  // no duplicate final line from finish()
  EXPECT_THAT(lines[5], HasSubstr("dev acc 0.8123 (step 50)"));  // says when it was measured
  EXPECT_THAT(lines[5], HasSubstr("loss 2.0000 (last nan)"));  // NaN skipped in the average
  EXPECT_EQ(lines[9], "step 100/100 100.0% | loss 2.0000 (last 2.0000) | 2.00 steps/s | "
                      "took 0:00:50 | dev acc 0.8123 (step 50)");
}

TEST(ProgressBar, PlainModeFinishPrintsUnprintedLastStep) {
  MemFile mem;
  double t = 0;
  smezo::ProgressOptions opt;
  opt.total_steps = 1000;
  opt.start_step = 200;  // resumed: the rate counts only steps run here
  opt.out = mem.f;
  opt.tty = 0;
  opt.plain_every = 100;
  opt.clock = [&t] { return t; };
  smezo::ProgressBar bar(opt);
  for (int step = 201; step <= 250; ++step) {
    t = (step - 200) * 0.1;  // 10 steps/s
    bar.update(step, 1.0);
  }
  EXPECT_EQ(mem.text(), "");
  EXPECT_DOUBLE_EQ(bar.eta_seconds(), 75.0);
  bar.finish();  // stopped early: one closing line
  std::vector<std::string> lines = split_lines(mem.text());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("step 250/1000 25.0%"));
  EXPECT_THAT(lines[0], HasSubstr("10.0 steps/s"));
  EXPECT_THAT(lines[0], HasSubstr("took 0:00:05"));
}

TEST(ProgressBar, TtyModeRedrawsAtMostFiveTimesPerSecond) {
  MemFile mem;
  double t = 0;
  smezo::ProgressOptions opt;
  opt.total_steps = 1000;
  opt.out = mem.f;
  opt.tty = 1;
  opt.clock = [&t] { return t; };
  {
    smezo::ProgressBar bar(opt);
    for (int step = 1; step <= 1000; ++step) {
      t = step * 0.001;  // 1000 steps in one second
      bar.update(step, 0.5);
    }
    bar.message("eval: dev acc 0.5");
  }  // destructor finishes the line
  std::string out = mem.text();
  size_t redraws = occurrences(out, "\r");
  EXPECT_GE(redraws, 5u);
  EXPECT_LE(redraws, 9u);  // first, ~5 timed, last, message + redraw, finish
  EXPECT_THAT(out, HasSubstr("\r\x1b[Keval: dev acc 0.5\n"));
  EXPECT_EQ(out.back(), '\n');
  EXPECT_THAT(out, HasSubstr("step 1000/1000 [########################] 100.0%"));
  EXPECT_THAT(out, HasSubstr("1000 steps/s"));
}

// --- metrics log

TEST(MetricsLog, LinesParseBackAndAppendResumes) {
  std::string dir = make_temp_dir("metrics");
  std::string path = dir + "/metrics.jsonl";
  {
    smezo::MetricsLog log(path, false);
    log.write({{"step", 1}, {"loss", 0.693}, {"lr", 1e-6}, {"g", -3.25}});
    log.write({{"step", 2}, {"loss", NAN}, {"dev_acc", 0.8}});
    EXPECT_THROW_MSG(log.write(nlohmann::json::array({1, 2})),
                     "metrics record for " + path + " must be a JSON object, got array");
    // Flushed per line: readable while the log is open.
    EXPECT_EQ(smezo::metrics_log_read(path).size(), 2u);
  }
  std::vector<std::string> lines = split_lines(read_file(path));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "{\"dev_acc\":0.8,\"loss\":null,\"step\":2}");

  // A crash left a partial line; append mode cuts it and continues.
  write_file(path, read_file(path) + "{\"step\":3,\"lo");
  {
    smezo::MetricsLog log(path, true);
    log.write({{"step", 3}, {"loss", 0.5}});
    log.write({{"step", 4}, {"loss", 0.4}});
  }
  std::vector<nlohmann::json> recs = smezo::metrics_log_read(path);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[0]["step"], 1);
  EXPECT_DOUBLE_EQ(recs[0]["lr"].get<double>(), 1e-6);
  EXPECT_TRUE(recs[1]["loss"].is_null());
  EXPECT_EQ(recs[3]["step"], 4);

  EXPECT_EQ(smezo::metrics_log_truncate_after(path, 2), 2);
  recs = smezo::metrics_log_read(path);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[1]["step"], 2);
  EXPECT_EQ(smezo::metrics_log_truncate_after(dir + "/missing.jsonl", 2), 0);
}

TEST(MetricsLog, BadMiddleLineNamesLine) {
  std::string path = make_temp_dir("metrics_bad") + "/m.jsonl";
  write_file(path, "{\"step\":1}\nnot json\n{\"step\":3}\n");
  const std::string msg = smezo_test::error_of([&] { smezo::metrics_log_read(path); });
  EXPECT_THAT(msg, HasSubstr("line 2"));
  EXPECT_THAT(msg, HasSubstr(path));
}

// --- run summary

TEST(RunSummary, WritesAtomicallyWithStandardFields) {
  std::string dir = make_temp_dir("summary");
  std::string path = dir + "/summary.json";
  nlohmann::json s = {{"method", "smezo"}, {"final_loss", 0.5}, {"best_dev_acc", NAN},
                      {"hostname", "kept"}};
  smezo::summary_add_standard_fields(&s);
  smezo::summary_write(path, s);
  smezo::summary_write(path, s);  // replaces
  nlohmann::json back = nlohmann::json::parse(read_file(path));
  EXPECT_EQ(back["method"], "smezo");
  EXPECT_EQ(back["hostname"], "kept");  // caller's value wins
  EXPECT_TRUE(back["best_dev_acc"].is_null());
  EXPECT_TRUE(back.contains("written_at"));
  EXPECT_GT(back["peak_host_rss_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(list_dir(dir), std::vector<std::string>{"summary.json"});  // no temp file left
  EXPECT_THROW_MSG(smezo::summary_write(path, nlohmann::json::array()),
                   "run summary for " + path + " must be a JSON object, got array");
  EXPECT_THROW_MSG(smezo::run_write_file_atomic(dir + "/no/such/dir/x.json", "{}"),
                   "cannot create " + dir + "/no/such/dir/x.json.tmp.");
}

// --- SVG plot

namespace {

void expect_clean_svg(const std::string& svg) {
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  std::string lower = svg;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  EXPECT_EQ(lower.find("nan"), std::string::npos);
  EXPECT_EQ(lower.find("inf"), std::string::npos);
  EXPECT_EQ(occurrences(svg, "<text"), occurrences(svg, "</text>"));
  EXPECT_EQ(occurrences(svg, "<"), occurrences(svg, ">"));
}

}  // namespace

TEST(SvgPlot, NiceTicks) {
  double lo, hi;
  std::vector<double> t = smezo::svg_nice_ticks(0, 20000, 8, true, &lo, &hi);
  EXPECT_EQ(t, (std::vector<double>{0, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000,
                                    18000, 20000}));
  t = smezo::svg_nice_ticks(0.23, 0.87, 6, false, &lo, &hi);
  EXPECT_NEAR(lo, 0.2, 1e-12);
  EXPECT_NEAR(hi, 0.9, 1e-12);
  EXPECT_EQ(t.size(), 8u);
  t = smezo::svg_nice_ticks(1, 3, 8, true, &lo, &hi);  // integer axis: no 1.5-steps
  EXPECT_EQ(t, (std::vector<double>{1, 2, 3}));
  t = smezo::svg_nice_ticks(5, 5, 6, false, &lo, &hi);  // constant: widened
  EXPECT_LT(lo, 5);
  EXPECT_GT(hi, 5);
  EXPECT_GE(t.size(), 3u);
}

TEST(SvgPlot, FullRunIsWellFormed) {
  smezo::PlotSeries loss, acc;
  for (int s = 1; s <= 20000; ++s)
    loss.push_back({double(s), 0.7 * std::exp(-s / 8000.0) + 0.01 * std::sin(s)});
  loss[10].second = NAN;
  loss[20].second = INFINITY;
  for (int s = 0; s <= 20000; s += 1000) acc.push_back({double(s), 0.6 + s * 1e-5});
  acc[3].second = NAN;
  std::string svg = smezo::training_plot_svg("SST-2 <S-MeZO> & \"friends\"", loss, acc);
  expect_clean_svg(svg);
  EXPECT_THAT(svg, HasSubstr("SST-2 &lt;S-MeZO&gt; &amp; &quot;friends&quot;"));
  EXPECT_EQ(occurrences(svg, "<polyline"), 3u);  // raw, smoothed, accuracy
  EXPECT_THAT(svg, HasSubstr(">20k<"));
  EXPECT_THAT(svg, HasSubstr("best dev accuracy 80.0% at step 20000"));
  EXPECT_LT(svg.size(), 200000u);  // thinned to the pixel columns

  std::string path = make_temp_dir("svg") + "/curve.svg";
  smezo::write_training_plot_svg(path, "run", loss, acc);
  expect_clean_svg(read_file(path));
}

TEST(SvgPlot, EmptyOnePointAndConstantSeries) {
  std::string svg = smezo::training_plot_svg("empty", {}, {});
  expect_clean_svg(svg);
  EXPECT_THAT(svg, HasSubstr("no loss data"));
  EXPECT_THAT(svg, HasSubstr("no dev accuracy data"));
  EXPECT_EQ(occurrences(svg, "<polyline"), 0u);

  svg = smezo::training_plot_svg("one", {{1, 0.7}}, {{1, 0.8}});
  expect_clean_svg(svg);
  EXPECT_EQ(occurrences(svg, "<polyline"), 0u);
  EXPECT_GE(occurrences(svg, "<circle"), 2u);  // a lone point is a marker

  smezo::PlotSeries flat;
  for (int s = 1; s <= 100; ++s) flat.push_back({double(s), 1.5});
  svg = smezo::training_plot_svg("flat", flat, {{50, 1.0}, {100, 1.0}});
  expect_clean_svg(svg);
  EXPECT_EQ(occurrences(svg, "<polyline"), 3u);
  EXPECT_EQ(svg.find(">101<"), std::string::npos);  // accuracy axis stays within 100%
  EXPECT_EQ(svg.find(">105<"), std::string::npos);

  svg = smezo::training_plot_svg("all skipped", {{1, NAN}, {2, NAN}}, {{1, NAN}});
  expect_clean_svg(svg);
  EXPECT_THAT(svg, HasSubstr("no loss data"));
}

// --- seed log

namespace {

nlohmann::json run_header() {
  return {{"method", "smezo"}, {"sparsity", 0.75}, {"eps", 1e-3}, {"seed", 42},
          {"model", "models/opt-1.3b"}};
}

std::string two_record_log() {
  return "# smezo seed log v1\n# {\"method\":\"mezo\"}\n1 11 3f800000 358637bd\n"
         "2 22 bf800000 358637bd\n";
}

}  // namespace

TEST(SeedLog, RecordTextIsExact) {
  smezo::SeedRecord r{7, UINT64_MAX, 1.0f, -0.0f};
  EXPECT_EQ(smezo::seed_log_format_record(r), "7 18446744073709551615 3f800000 80000000\n");
  smezo::SeedRecord p{};
  EXPECT_TRUE(smezo::seed_log_parse_record("7 18446744073709551615 3f800000 80000000", &p));
  EXPECT_EQ(p.step, 7);
  EXPECT_EQ(p.seed, UINT64_MAX);
  EXPECT_TRUE(smezo::seed_log_parse_record("7 0 3F800000 80000000", &p));  // upper case read
  for (const char* bad : {"7 18446744073709551616 3f800000 80000000",  // seed overflow
                          "-7 1 3f800000 80000000", "7 -1 3f800000 80000000",
                          "7 1 3f80000 80000000", "7 1 3f800000 800000000",
                          "7 1 3f800000 80000000 ", "7  1 3f800000 80000000",
                          "7 1 0x3f8000 80000000", "7 1 3f800000", "", "7 1 3g800000 80000000",
                          "7 1 3f800000 80000000\r"}) {
    EXPECT_FALSE(smezo::seed_log_parse_record(bad, &p)) << "'" << bad << "'";
  }
}

TEST(SeedLog, RoundTripIsBitExact) {
  std::string path = make_temp_dir("seedlog") + "/seeds.txt";
  const std::vector<float> awkward = {
      1e-38f, -0.0f, 0.0f, 3.14159274f, 1e-45f /* denormal min */,
      std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
      -std::numeric_limits<float>::infinity(), smezo::bits_float(0x7fc01234u) /* NaN payload */,
      0.1f, -123456.789f, 1e-6f};
  const std::vector<uint64_t> seeds = {0, 1, UINT64_MAX, 1ull << 63, 12157665459056928801ull};
  std::vector<smezo::SeedRecord> written;
  {
    smezo::SeedLogWriter w = smezo::SeedLogWriter::create(path, run_header(), 4);
    for (size_t i = 0; i < awkward.size(); ++i) {
      smezo::SeedRecord r{int64_t(i) + 1, seeds[i % seeds.size()], awkward[i],
                          awkward[awkward.size() - 1 - i]};
      w.append(r);
      written.push_back(r);
    }
    EXPECT_EQ(w.last_step(), int64_t(awkward.size()));
    w.close();
  }
  smezo::SeedLog log = smezo::seed_log_read(path);
  EXPECT_EQ(log.header, run_header());
  EXPECT_FALSE(log.partial_tail);
  ASSERT_EQ(log.records.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(log.records[i].step, written[i].step);
    EXPECT_EQ(log.records[i].seed, written[i].seed);
    EXPECT_EQ(smezo::float_bits(log.records[i].g), smezo::float_bits(written[i].g)) << "record " << i;
    EXPECT_EQ(smezo::float_bits(log.records[i].lr), smezo::float_bits(written[i].lr)) << "record " << i;
  }
  std::string text = read_file(path);
  EXPECT_EQ(text.rfind("# smezo seed log v1\n# {", 0), 0u);
}

TEST(SeedLog, WriterFlushesEveryNAndRefusesGapsAndOverwrite) {
  std::string path = make_temp_dir("seedlog_flush") + "/seeds.txt";
  smezo::SeedLogWriter w = smezo::SeedLogWriter::create(path, run_header(), 2);
  EXPECT_TRUE(smezo::seed_log_read(path).records.empty());  // header is durable at once
  w.append({1, 5, 0.5f, 1e-6f});
  EXPECT_EQ(smezo::seed_log_read(path).records.size(), 0u);  // buffered
  w.append({2, 6, 0.25f, 1e-6f});
  EXPECT_EQ(smezo::seed_log_read(path).records.size(), 2u);  // flushed at N = 2
  w.append({3, 7, 0.125f, 1e-6f});
  w.flush();
  EXPECT_EQ(smezo::seed_log_read(path).records.size(), 3u);
  EXPECT_THROW_MSG(w.append({5, 8, 0.f, 0.f}), ": appending step 5 after step 3 (steps must be consecutive)");
  EXPECT_THROW_MSG(smezo::SeedLogWriter::create(path, run_header(), 1),
                   "seed log " + path + " already exists ---> HINT: continue that run (smezo train --resume)");
  EXPECT_THROW_MSG(smezo::SeedLogWriter::create(path + ".2", nlohmann::json::array(), 1),
                   "seed log header for " + path + ".2 must be a JSON object, got array");
}

TEST(SeedLog, TruncatedFinalLineIsToleratedAndCutOnAppend) {
  std::string path = make_temp_dir("seedlog_tail") + "/seeds.txt";
  write_file(path, two_record_log() + "3 33 3f80");
  smezo::SeedLog log = smezo::seed_log_read(path);
  ASSERT_EQ(log.records.size(), 2u);
  EXPECT_TRUE(log.partial_tail);
  EXPECT_EQ(log.partial_tail_line, 5);
  EXPECT_EQ(log.header["method"], "mezo");

  {
    smezo::SeedLogWriter w = smezo::SeedLogWriter::open_append(path, 1);
    EXPECT_EQ(w.header()["method"], "mezo");
    EXPECT_EQ(w.last_step(), 2);
    EXPECT_THROW_MSG(w.append({4, 1, 0.f, 0.f}), ": appending step 4 after step 2 (steps must be consecutive)");
    w.append({3, 33, 1.0f, 2.0f});
  }
  log = smezo::seed_log_read(path);
  EXPECT_FALSE(log.partial_tail);
  ASSERT_EQ(log.records.size(), 3u);
  EXPECT_EQ(log.records[2].seed, 33u);
  EXPECT_EQ(read_file(path), two_record_log() + "3 33 3f800000 40000000\n");
}

TEST(SeedLog, MalformedMiddleLineNamesFileAndLine) {
  std::string path = make_temp_dir("seedlog_bad") + "/seeds.txt";
  write_file(path, "# smezo seed log v1\n# {\"method\":\"mezo\"}\n1 11 3f800000 358637bd\n"
                   "2 22 bf80000 358637bd\n3 33 3f800000 358637bd\n");
  const std::string msg = smezo_test::error_of([&] { smezo::seed_log_read(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("line 4"));
  // A malformed final line that does end in '\n' is not a partial write.
  write_file(path, two_record_log() + "garbage\n");
  EXPECT_THROW_MSG(smezo::seed_log_read(path),
                   "seed log " + path + " line 5 is malformed: 'garbage' (expected 'step seed g lr'");
}

TEST(SeedLog, NonConsecutiveStepsAndBadHeadersAreErrors) {
  std::string dir = make_temp_dir("seedlog_steps");
  std::string path = dir + "/seeds.txt";
  write_file(path, two_record_log() + "4 44 3f800000 358637bd\n");
  const std::string msg = smezo_test::error_of([&] { smezo::seed_log_read(path); });
  EXPECT_THAT(msg, HasSubstr("line 5"));
  EXPECT_THAT(msg, HasSubstr("step 4 follows step 2"));
  write_file(path, "step seed g lr\n1 1 3f800000 3f800000\n");
  EXPECT_THAT([&] { smezo::seed_log_read(path); },
              testing::ThrowsMessage<smezo::Error>(HasSubstr("not a smezo seed log")));
  write_file(path, "# smezo seed log v1\n1 1 3f800000 3f800000\n");
  EXPECT_THROW_MSG(smezo::seed_log_read(path), " line 2: a record before the run header");
  write_file(path, "# smezo seed log v1\n# {not json\n");
  EXPECT_THROW_MSG(smezo::seed_log_read(path), " line 2: the run header is not a JSON object: '# {not json'");
  write_file(path, "");
  EXPECT_THROW_MSG(smezo::seed_log_read(path), "seed log " + path + " is empty (not written by smezo train?)");
  EXPECT_THROW_MSG(smezo::seed_log_read(dir + "/missing.txt"),
                   "cannot open seed log " + dir + "/missing.txt: No such file or directory");
  // Comments and blank lines are fine.
  write_file(path, "# smezo seed log v1\n# a comment\n# {\"m\":1}\n\n1 1 3f800000 3f800000\n");
  EXPECT_EQ(smezo::seed_log_read(path).records.size(), 1u);
}

// Resume's append after a crash: the partial last line is cut, the header and every whole record stay.
TEST(SeedLog, OpenAppendCutsAPartialLastLine) {
  std::string dir = make_temp_dir("seedlog_append");
  std::string path = dir + "/seeds.txt";
  {
    smezo::SeedLogWriter w = smezo::SeedLogWriter::create(path, run_header(), 0);
    for (int64_t s = 1; s <= 10; ++s) w.append({s, uint64_t(s) * 1000, float(s), 1e-6f});
  }
  write_file(path, read_file(path) + "11 11000 41");  // and a partial line from a crash
  EXPECT_TRUE(smezo::seed_log_read(path).partial_tail);
  {
    smezo::SeedLogWriter w = smezo::SeedLogWriter::open_append(path, 1);
    w.append({11, 7777, 7.0f, 1e-6f});
  }
  smezo::SeedLog log = smezo::seed_log_read(path);
  EXPECT_EQ(log.header, run_header());
  EXPECT_FALSE(log.partial_tail);
  ASSERT_EQ(log.records.size(), 11u);
  EXPECT_EQ(log.records[9].seed, 10000u);
  EXPECT_EQ(log.records.back().seed, 7777u);
  EXPECT_EQ(list_dir(dir), std::vector<std::string>{"seeds.txt"});
}

TEST(ProgressBar, TtyLineFitsTheTerminal) {
  MemFile mem;
  double t = 0;
  smezo::ProgressOptions opt;
  opt.total_steps = 20000;
  opt.out = mem.f;
  opt.tty = 1;
  opt.clock = [&t] { return t; };
  for (int columns : {200, 100, 80, 40}) {
    opt.columns = columns;
    smezo::ProgressBar bar(opt);
    t += 1;
    bar.update(1200, 0.7);
    std::string line = bar.status_line();
    EXPECT_LT(line.size(), size_t(columns)) << line;
    EXPECT_EQ(line.rfind("step  1200/20000 [", 0), 0u) << line;
    if (columns == 200) {
      EXPECT_THAT(line, HasSubstr("[#>                      ]"));
    }
  }
}

// --- error sites a user reaches

// A header line that follows the records (two logs pasted together, or a hand edit): refused
// as a second header, naming the file and the line.
TEST(SeedLog, HeaderAfterTheRecordsIsRefused) {
  std::string path = make_temp_dir("seedlog_late_header") + "/seeds.txt";
  write_file(path, "# smezo seed log v1\n# {\"m\":1}\n1 1 3f800000 3f800000\n# {\"m\":2}\n");
  EXPECT_THAT([&] { smezo::seed_log_read(path); },
              testing::ThrowsMessage<smezo::Error>(HasSubstr("seed log " + path + " line 4: a second run header")));
}

// A failed write (under a file-size limit): a one-line error naming the file and the limit,
// no temporary file left behind, and the previous file intact.
TEST(RunSummary, FailedWriteIsNamedAndLeavesTheOldFile) {
  std::string dir = make_temp_dir("summary_fsize");
  std::string path = dir + "/summary.json";
  smezo::run_write_file_atomic(path, "{\"old\": 1}\n");
  std::string msg = smezo_test::error_under_file_size_limit(
      4096, [&] { smezo::run_write_file_atomic(path, std::string(65536, 'x')); });
  EXPECT_THAT(msg, HasSubstr("cannot write " + path + ": File too large ---> HINT: a file-size limit"));
  EXPECT_THAT(msg, HasSubstr("ulimit -f"));
  EXPECT_TRUE(smezo_test::is_one_line(msg));
  EXPECT_EQ(read_file(path), "{\"old\": 1}\n");
  EXPECT_EQ(list_dir(dir), std::vector<std::string>{"summary.json"});
}

// The seed log's two write sites under the same limit: a flush after each record fails at
// the flush; records buffered without flushing fail at the write once the buffer spills.
TEST(SeedLog, FailedWriteOrFlushIsNamed) {
  std::string dir = make_temp_dir("seedlog_fsize");
  std::string path = dir + "/flush.txt";
  {
    smezo::SeedLogWriter w = smezo::SeedLogWriter::create(path, run_header(), 1);
    const rlim_t size = static_cast<rlim_t>(read_file(path).size());
    std::string msg = smezo_test::error_under_file_size_limit(size, [&] { w.append({1, 7, 0.5f, 1e-6f}); });
    EXPECT_THAT(msg, HasSubstr("cannot write the seed log " + path + ": File too large"));
    EXPECT_THAT(msg, HasSubstr("ulimit -f"));
  }
  path = dir + "/write.txt";
  smezo::SeedLogWriter w = smezo::SeedLogWriter::create(path, run_header(), 0);
  const rlim_t size = static_cast<rlim_t>(read_file(path).size());
  std::string msg = smezo_test::error_under_file_size_limit(size, [&] {
    for (int64_t step = 1; step <= 100000; step++) w.append({step, 7, 0.5f, 1e-6f});
  });
  EXPECT_THAT(msg, HasSubstr("cannot write the seed log " + path + ": File too large"));
  EXPECT_THAT(msg, HasSubstr("ulimit -f"));
}
