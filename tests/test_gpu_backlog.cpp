// tools/gpu_backlog.sh, the runner of everything owed to a GPU: its plan fits the
// lease, a dry run of some items on the CPU resumes across calls and records a failed job
// instead of retrying it, the budget stops a call before a job that does not fit, the test
// shards tell failures under load from failures, and the SmolLM2 parts join only to the right
// bytes. (The whole dry run, every item, is run before a lease: docs/gpu-backlog.md.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;
using testing::Not;

namespace {

// The backlog on the CPU, dry, with this build's binaries and its own state folder.
std::string dry_backlog(const std::string& state, const std::string& args, const std::string& env = "") {
  const std::string bin = smezo_test::smezo_binary();
  return "DEVICE=cpu SMEZO_BIN=" + bin + " SMEZO_TESTS_BIN=" + smezo_test::build_dir() + "/smezo_tests " + env +
         " tools/gpu_backlog.sh next --dry-run --state " + state + " --out " + state + "/out " + args + " 2>&1";
}

std::string status_of(const std::string& state, const std::string& job) {
  const auto st = nlohmann::json::parse(read_file(state + "/state.json"));
  return st["jobs"][job]["status"].get<std::string>();
}

}  // namespace

// The plan simulates the scheduler over device calls with the jobs' estimates (measured times
// where a GPU has run them) and says whether items 1-4 and the whole list fit 4 leases of 15
// minutes; it exits 1 when not, so an estimate raised past the leases fails here. Item 1 (the
// suite, sanitizers, oracle) must finish in the first call of the first lease. It states its
// assumptions and what to carry.
TEST(GpuBacklog, PlanFitsTheLease) {
  std::string out;
  ASSERT_EQ(run_command("tools/gpu_backlog.sh --plan", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("(limit: 4 leases of 15 min): fits"));
  EXPECT_THAT(out, HasSubstr("measured by 3.calibrate on an H200"));  // SmolLM2's ms/step, no longer an estimate
  EXPECT_THAT(out, testing::ContainsRegex("\\| A\\.1 \\| [^|]* \\| 1\\.build, [^|]*1\\.initcheck"));
  EXPECT_THAT(out, HasSubstr("| 3 | 3.grid | lease grid, SST-2"));
  EXPECT_THAT(out, HasSubstr("3. the lease-sized paper grid"));
  EXPECT_THAT(out, HasSubstr("| A.1 | deps/debs, deps/wheels, carry/backlog/call1 | 1.build"));
  EXPECT_THAT(out, Not(HasSubstr("DOES NOT FIT")));
  // item 9, after the list: the claim grid in slices (SST-2, the peer beside it, then RTE and BoolQ)
  EXPECT_THAT(out, HasSubstr("| 9 | 9.claim-sst2 | claim grid, SST-2"));
  EXPECT_THAT(out, HasSubstr("| 9 | 9.peer-sst2 | the PyTorch peer (tools/claim/zo_peer.py)"));
  EXPECT_THAT(out, HasSubstr("| 9 | 9.claim-rest | claim grid, RTE and BoolQ"));
  EXPECT_THAT(out, testing::ContainsRegex("- item 9 \\(optional, the claim grid and the peer\\): done in lease "));
  EXPECT_THAT(out, HasSubstr("--runs /tmp/smezo-backlog/claim-grid --calibration /tmp/smezo-backlog/grid/calibration.json"));
}

// Two items on tiny settings over three calls: the first call's budget is too small for the
// build's estimate, so it stops before starting anything; the second runs them, with the test
// binary replaced by `false`, so 1.tests fails and is recorded; the third does not run it again
// (and says so by exiting 1), and --retry with the real binary runs it and passes.
TEST(GpuBacklog, DryRunResumesAndRecordsFailures) {
  const std::string state = make_temp_dir("gpu_backlog_dry");
  std::string out;
  EXPECT_EQ(run_command(dry_backlog(state, "--only 1.tests,1.determinism-f32 --budget-s 30"), &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("call ends: next: 1.build needs ~"));
  EXPECT_EQ(status_of(state, "1.tests"), "pending");

  EXPECT_EQ(run_command(dry_backlog(state, "--only 1.tests,1.determinism-f32", "SMEZO_TESTS_BIN=/bin/false"), &out),
            1) << out;
  EXPECT_THAT(out, HasSubstr("failed: 1.tests"));
  EXPECT_EQ(status_of(state, "1.tests"), "failed");
  EXPECT_EQ(status_of(state, "1.determinism-f32"), "done");
  const std::string md = read_file(state + "/out/backlog.md");
  EXPECT_THAT(md, HasSubstr("## Call 2 — "));
  EXPECT_THAT(md, HasSubstr("### 1.determinism-f32 — done"));
  EXPECT_THAT(md, HasSubstr("3 passed, 0 failed"));  // determinism, kill-resume, replay

  EXPECT_EQ(run_command(dry_backlog(state, "--only 1.tests,1.determinism-f32"), &out), 1) << out;
  EXPECT_THAT(out, Not(HasSubstr("1.tests            started")));
  EXPECT_THAT(out, Not(HasSubstr("1.determinism-f32  started")));

  EXPECT_EQ(run_command(dry_backlog(state, "--only 1.tests,1.determinism-f32 --retry 1.tests"), &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("1.tests            done"));
  EXPECT_EQ(status_of(state, "1.tests"), "done");
  EXPECT_THAT(read_file(state + "/out/backlog.md"), HasSubstr("## Call 4 — "));
}

// The real backlog refuses to start without a GPU (it would build and run for one); DEVICE=cpu
// is for a dry run only, and the emulated target needs its binary named.
TEST(GpuBacklog, RefusesWhatItCannotDo) {
  std::string out;
  if (run_command("nvidia-smi -L > /dev/null 2>&1", &out) != 0) {
    EXPECT_EQ(run_command("tools/gpu_backlog.sh next --state " + make_temp_dir("gpu_backlog_nogpu") + " 2>&1", &out),
              2);
    EXPECT_THAT(out, HasSubstr("no GPU visible"));
  }
  EXPECT_EQ(run_command("DEVICE=cpu tools/gpu_backlog.sh next 2>&1", &out), 2);
  EXPECT_THAT(out, HasSubstr("add --dry-run"));
  EXPECT_EQ(run_command("env -u SMEZO_BIN DEVICE=cuda-emu tools/gpu_backlog.sh next --dry-run 2>&1", &out), 2);
  EXPECT_THAT(out, HasSubstr("needs SMEZO_BIN"));
}

// _shards runs a command N times with gtest's shard variables, sums the closing lines and reruns
// the failed tests alone: a test that fails only in shard 0 (under load) passes alone, and the
// runner says so and exits 0; one that fails alone too makes it exit 1.
TEST(GpuBacklog, ShardsRerunFailuresAlone) {
  const std::string dir = make_temp_dir("gpu_backlog_shards");
  write_file(dir + "/fake.sh",
             "case \"$*\" in *--gtest_filter=*) alone=1 ;; *) alone=0 ;; esac\n"
             "if [ \"$alone\" = 0 ] && [ \"${GTEST_SHARD_INDEX:-}\" = 0 ]; then\n"
             "  echo '[  FAILED  ] Fake.UnderLoad (5 ms)'; echo 'smezo_tests: 3 passed, 1 failed, 0 skipped'; exit 1\n"
             "fi\n"
             "if [ \"$alone\" = 1 ] && [ -n \"${ALWAYS:-}\" ]; then echo '[  FAILED  ] Fake.UnderLoad'; exit 1; fi\n"
             "echo 'smezo_tests: 4 passed, 0 failed, 0 skipped'\n");
  std::string out;
  ASSERT_EQ(run_command("python3 tools/gpu/gpu_backlog.py _shards 3 " + dir + "/t bash " + dir + "/fake.sh --rerun-failed",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("[shards] 0/3 rc=1 smezo_tests: 3 passed, 1 failed, 0 skipped"));
  EXPECT_THAT(out, HasSubstr("[shards] 2/3 rc=0 smezo_tests: 4 passed, 0 failed, 0 skipped"));
  EXPECT_THAT(out, HasSubstr("[shards] failed: Fake.UnderLoad"));
  EXPECT_THAT(out, HasSubstr("still failing: none; passed alone (failed only under load): Fake.UnderLoad"));
  EXPECT_EQ(run_command("ALWAYS=1 python3 tools/gpu/gpu_backlog.py _shards 2 " + dir + "/u bash " + dir +
                            "/fake.sh --rerun-failed",
                        &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("still failing: Fake.UnderLoad"));
}

// The GGUF travels xz-packed in parts; _join-gguf puts them together and accepts only the bytes
// whose sha256 the manifest names (here a made-up 3-part file; prepare writes the real one).
TEST(GpuBacklog, JoinChecksTheParts) {
  const std::string state = make_temp_dir("gpu_backlog_join");
  std::string out;
  const std::string make_parts =
      "python3 -c \"\n"
      "import lzma, hashlib, json, os\n"
      "data = os.urandom(300000)\n"
      "packed = lzma.compress(data)\n"
      "os.makedirs('" + state + "/carry')\n"
      "cut = [0, len(packed) // 3, 2 * len(packed) // 3, len(packed)]\n"
      "parts = []\n"
      "for k in range(3):\n"
      "    name = 'smollm2.gguf.xz.%02d' % k\n"
      "    open('" + state + "/carry/' + name, 'wb').write(packed[cut[k]:cut[k + 1]])\n"
      "    parts.append({'name': name, 'bytes': cut[k + 1] - cut[k], 'call': k + 1})\n"
      "gguf = {'name': 'm.gguf', 'bytes': len(data), 'sha256': hashlib.sha256(data).hexdigest()}\n"
      "json.dump({'gguf': gguf, 'parts': parts}, open('" + state + "/carry/manifest.json', 'w'))\n"
      "open('" + state + "/expected', 'wb').write(data)\n"
      "\"";
  ASSERT_EQ(run_command(make_parts, &out), 0) << out;
  ASSERT_EQ(run_command("python3 tools/gpu/gpu_backlog.py _join-gguf " + state, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("300000 bytes from 3 parts, sha256 ok"));
  EXPECT_EQ(read_file(state + "/weights/m.gguf"), read_file(state + "/expected"));
  // a part cut short: the join refuses and leaves no file behind
  ASSERT_EQ(run_command("rm " + state + "/weights/m.gguf && truncate -s -10 " + state + "/carry/smollm2.gguf.xz.02",
                        &out), 0);
  EXPECT_NE(run_command("python3 tools/gpu/gpu_backlog.py _join-gguf " + state + " 2>&1", &out), 0);
  EXPECT_NE(run_command("test -e " + state + "/weights/m.gguf", &out), 0);
}

// The GPU machine has torch and transformers but not PEFT: 1.oracle installs the wheels that
// tools/deps.sh downloads into deps/wheels (call 1 carries them) into the state's pylib/, then
// runs tools/oracles/peft_oracle.py with it on PYTHONPATH. (The round trip itself needs torch: CI's dry
// run compiles the scripts and shows this install; tools/oracles/peft_oracle.py says how to run it.)
TEST(GpuBacklog, OracleInstallsTheCarriedPeft) {
  const std::string state = make_temp_dir("gpu_backlog_pylib");
  std::string out;
  ASSERT_EQ(run_command("python3 tools/gpu/gpu_backlog.py _pylib --dry " + state + " 2>&1", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("-m pip install -q --no-deps --no-index --target " + state + "/pylib "));
  for (const char* wheel : {"deps/wheels/peft-0.21.2-", "deps/wheels/accelerate-", "deps/wheels/psutil-"})
    EXPECT_THAT(out, HasSubstr(wheel));
  ASSERT_EQ(run_command("tools/gpu_backlog.sh --plan --state /nonexistent", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("python3 tools/gpu/gpu_backlog.py _pylib /tmp/smezo-backlog && "
                             "PYTHONPATH=/tmp/smezo-backlog/pylib${PYTHONPATH:+:$PYTHONPATH} python3 tools/oracles/peft_oracle.py "
                             "--device cuda"));
}

// docs/gpu-backlog.md "The plan" is the plan's output, not a list kept by hand: every line the
// plan prints (its own heading aside) is there. When an estimate, a job or a command changes,
// regenerate that section: tools/gpu_backlog.sh --plan --state /nonexistent.
TEST(GpuBacklog, DocsHoldThePlan) {
  std::string out;
  ASSERT_EQ(run_command("tools/gpu_backlog.sh --plan --state /nonexistent", &out), 0) << out;
  const std::string page = read_file("docs/gpu-backlog.md");
  size_t at = out.find('\n') + 1, missing = 0;
  std::string first_missing;
  while (at < out.size()) {
    size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(at, end - at);
    if (!line.empty() && page.find(line) == std::string::npos && missing++ == 0) first_missing = line;
    at = end + 1;
  }
  EXPECT_EQ(missing, 0u) << "docs/gpu-backlog.md lacks " << missing
                         << " line(s) of tools/gpu_backlog.sh --plan, the first: " << first_missing
                         << "\n---> HINT: regenerate its section 'The plan' from the plan";
}

// The binaries prepare builds here travel as a tarball stamped with the sources they came from
// (tools/gpu/gpu_prebuilt.py). On the GPU machine they are used only when the stamp matches, no
// build/ folder was made there, and they run; otherwise nothing is left behind and the job
// makes. Fake binaries (shell scripts) stand in for smezo and smezo_tests.
TEST(GpuBacklog, PrebuiltBinariesOnlyWhenTheyMatchAndRun) {
  const std::string dir = make_temp_dir("gpu_prebuilt");
  write_file(dir + "/check.py",
             "import os, sys, tarfile, io\n"
             "sys.path.insert(0, 'tools/gpu')\n"
             "import gpu_prebuilt as g\n"
             "def fake(root, stamp, tests_rc):\n"
             "    os.makedirs(root, exist_ok=True)\n"
             "    tgz = os.path.join(root, 'p.tar.gz')\n"
             "    with tarfile.open(tgz, 'w:gz') as t:\n"
             "        for name, body in (('smezo', 'echo smezo 0.1.0'), ('smezo_tests', 'echo ran; exit %d' % tests_rc),\n"
             "                           ('prebuilt.stamp', stamp)):\n"
             "            data = ('#!/bin/sh\\n' + body + '\\n' if name != 'prebuilt.stamp' else body).encode()\n"
             "            info = tarfile.TarInfo('build-gpu/' + name); info.size = len(data); info.mode = 0o755\n"
             "            t.addfile(info, io.BytesIO(data))\n"
             "    return tgz\n"
             "d = sys.argv[1]\n"
             "ok, why = g.install(d + '/a', fake(d + '/a', 'S1', 0), 'S2')\n"
             "print('other-stamp', ok, os.path.exists(d + '/a/build'), why)\n"
             "ok, why = g.install(d + '/b', fake(d + '/b', 'S1', 0), 'S1')\n"
             "print('match', ok, os.path.islink(d + '/b/build'), os.path.exists(d + '/b/build/smezo'))\n"
             "ok, why = g.install(d + '/c', fake(d + '/c', 'S1', 3), 'S1')\n"
             "print('fails-there', ok, os.path.lexists(d + '/c/build'), 'rc 3' in why)\n"
             "os.makedirs(d + '/e/build')\n"
             "ok, why = g.install(d + '/e', fake(d + '/e', 'S1', 0), 'S1')\n"
             "print('made-there', ok, os.path.islink(d + '/e/build'), why)\n");
  std::string out;
  ASSERT_EQ(run_command("python3 " + dir + "/check.py " + dir, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("other-stamp False False built from other sources"));
  EXPECT_THAT(out, HasSubstr("match True True True"));
  EXPECT_THAT(out, HasSubstr("fails-there False False True"));
  EXPECT_THAT(out, HasSubstr("made-there False False build/ was made on this machine"));
}

// A fresh machine takes the grid's finished runs from an earlier machine's logs tarball; a run
// that had not finished (no checkpoint travels) is left out, so zo_grid starts it again.
TEST(GpuBacklog, FreshMachineTakesOnlyFinishedGridRuns) {
  const std::string dir = make_temp_dir("gpu_backlog_restore");
  write_file(dir + "/check.py",
             "import io, json, os, sys, tarfile\n"
             "sys.path.insert(0, 'tools/gpu')\n"
             "import gpu_backlog as b\n"
             "d = sys.argv[1]\n"
             "files = {'grid/sst2/smezo-a/summary.json': json.dumps({'status': 'completed'}),\n"
             "         'grid/sst2/smezo-a/metrics.jsonl': '{}',\n"
             "         'grid/sst2/mezo-b/seed_log.txt': 'x',\n"
             "         'grid/sst2/mezo-b/metrics.jsonl': '{}',\n"
             "         'grid/sst2/zero-shot.json': '{}',\n"
             "         'logs/1.tests/1.tests.log': 'x'}\n"
             "with tarfile.open(d + '/logs.tar.gz', 'w:gz') as t:\n"
             "    for name, body in files.items():\n"
             "        info = tarfile.TarInfo(name); info.size = len(body); t.addfile(info, io.BytesIO(body.encode()))\n"
             "print(b.restore_finished_runs(d + '/state', d + '/logs.tar.gz'))\n"
             "for name in sorted(files):\n"
             "    print(name, os.path.exists(os.path.join(d, 'state', name)))\n"
             "print('again', b.restore_finished_runs(d + '/state', d + '/logs.tar.gz'))\n");
  std::string out;
  ASSERT_EQ(run_command("python3 " + dir + "/check.py " + dir, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("1 finished grid run(s) and 1 other grid file(s)"));
  EXPECT_THAT(out, HasSubstr("grid/sst2/smezo-a/summary.json True"));
  EXPECT_THAT(out, HasSubstr("grid/sst2/smezo-a/metrics.jsonl True"));
  EXPECT_THAT(out, HasSubstr("grid/sst2/mezo-b/seed_log.txt False"));
  EXPECT_THAT(out, HasSubstr("grid/sst2/mezo-b/metrics.jsonl False"));
  EXPECT_THAT(out, HasSubstr("grid/sst2/zero-shot.json True"));
  EXPECT_THAT(out, HasSubstr("logs/1.tests/1.tests.log False"));
  EXPECT_THAT(out, HasSubstr("again []"));  // a machine that has its grid keeps it
}

// The claim grid's and the peer's run trees come back the same way; a fresh machine that has
// the lease grid already still takes the claim's finished runs.
TEST(GpuBacklog, FreshMachineTakesTheClaimAndPeerRunsToo) {
  const std::string dir = make_temp_dir("gpu_backlog_restore_claim");
  write_file(dir + "/check.py",
             "import io, json, os, sys, tarfile\n"
             "sys.path.insert(0, 'tools/gpu')\n"
             "import gpu_backlog as b\n"
             "d = sys.argv[1]\n"
             "done = json.dumps({'status': 'completed'})\n"
             "files = {'claim-grid/sst2/smezo-a/summary.json': done, 'claim-grid/sst2/mezo-b/seed_log.txt': 'x',\n"
             "         'peer/sst2/mezo-c/summary.json': done, 'grid/sst2/mezo-d/summary.json': done}\n"
             "with tarfile.open(d + '/logs.tar.gz', 'w:gz') as t:\n"
             "    for name, body in files.items():\n"
             "        info = tarfile.TarInfo(name); info.size = len(body); t.addfile(info, io.BytesIO(body.encode()))\n"
             "os.makedirs(d + '/state/grid')\n"
             "print(b.restore_finished_runs(d + '/state', d + '/logs.tar.gz'))\n"
             "for name in sorted(files):\n"
             "    print(name, os.path.exists(os.path.join(d, 'state', name)))\n");
  std::string out;
  ASSERT_EQ(run_command("python3 " + dir + "/check.py " + dir, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("2 finished grid run(s)"));
  EXPECT_THAT(out, HasSubstr("claim-grid/sst2/smezo-a/summary.json True"));
  EXPECT_THAT(out, HasSubstr("claim-grid/sst2/mezo-b/seed_log.txt False"));
  EXPECT_THAT(out, HasSubstr("peer/sst2/mezo-c/summary.json True"));
  EXPECT_THAT(out, HasSubstr("grid/sst2/mezo-d/summary.json False"));  // this machine has its own grid/
}

// When the logs outgrow a transfer, a finished run's step-by-step metrics shrink to its dev
// evaluations and its own plot stays behind (the claim grid: ~130 runs of 3,000 steps).
TEST(GpuBacklog, TrimmedLogsKeepTheDevEvaluations) {
  const std::string dir = make_temp_dir("gpu_backlog_trim");
  write_file(dir + "/check.py",
             "import json, os, sys, tarfile\n"
             "sys.path.insert(0, 'tools/gpu')\n"
             "import gpu_backlog as b\n"
             "d = sys.argv[1] + '/state'\n"
             "run = os.path.join(d, 'claim-grid', 'sst2', 'smezo-a')\n"
             "os.makedirs(run)\n"
             "open(run + '/summary.json', 'w').write('{}')\n"
             "open(run + '/plot.svg', 'w').write('<svg/>')\n"
             "open(run + '/metrics.jsonl', 'w').write('{\"step\": 1, \"loss\": 1}\\n{\"dev_acc\": 0.5, \"step\": 1}\\n')\n"
             "for trim in (False, True):\n"
             "    b.write_tarball(d, d + '/t.tgz', True, trim)\n"
             "    t = tarfile.open(d + '/t.tgz')\n"
             "    names = sorted(m.name for m in t.getmembers())\n"
             "    print(trim, names, t.extractfile('claim-grid/sst2/smezo-a/metrics.jsonl').read())\n");
  std::string out;
  ASSERT_EQ(run_command("python3 " + dir + "/check.py " + dir, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("False ['claim-grid/sst2/smezo-a/metrics.jsonl', 'claim-grid/sst2/smezo-a/plot.svg', "
                             "'claim-grid/sst2/smezo-a/summary.json']"));
  EXPECT_THAT(out, HasSubstr("True ['claim-grid/sst2/smezo-a/metrics.jsonl', 'claim-grid/sst2/smezo-a/summary.json'] "
                             "b'{\"dev_acc\": 0.5, \"step\": 1}\\n'"));
}
