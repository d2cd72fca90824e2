"""The GPU machine's binaries, built here and carried there, so that a device call does not spend
its minutes compiling: on an H200 (2026-11-25) `make` took 337 s of a 15-minute lease.

Here (tools/gpu_backlog.sh prepare): the command the GPU machine would run (the carried Debian
packages unpacked into deps/root, the Open MPI 5 wheel, sm_90a) into build-gpu/, at the same
path as there (/work/main: the binaries hold absolute paths to deps/ and the assets); then the
binaries, stripped of their debug sections (symbols stay, so sanitizer backtraces keep function
names), go into one tarball with the stamp of the sources they were built from.

There (`tools/gpu/gpu_backlog.py _prebuilt STATE`, from the 1.build job): unpacks them into
build-gpu/, points build -> build-gpu and runs both once on the GPU. A stamp of other sources,
a build/ folder made on the machine, or a failed run exits 1, and the job builds with make as
before. Only the Python standard library is used.
"""
import os
import shutil
import subprocess
import tarfile
import tempfile

BUILD_DIR = "build-gpu"
TARBALL = "prebuilt.tar.gz"
STAMP_NAME = "prebuilt.stamp"
BINARIES = ("smezo", "smezo_tests")
# one test that launches kernels and checks their bits: the binary's sm_90a code runs here
SMOKE_TESTS = "CudaCheck.*:NoiseCuda.PhiloxWordsBitExactAndMatchCurand"


def build_here(root, jobs, log_path):
    """make for the GPU machine into build-gpu/; True when both binaries were made."""
    cmd = ("tools/deps.sh unpack > /dev/null && . tools/mpi_env.sh && "
           "make -j%d BUILD=%s DEPS=deps/root CUDA_ARCH=90a all %s/smezo_tests" % (jobs, BUILD_DIR, BUILD_DIR))
    with open(log_path, "w") as log:
        rc = subprocess.call(["bash", "-c", cmd], cwd=root, stdout=log, stderr=subprocess.STDOUT)
    return rc == 0 and all(os.access(os.path.join(root, BUILD_DIR, b), os.X_OK) for b in BINARIES)


def pack(root, dest, stamp):
    """The stripped binaries and the stamp into the tarball dest."""
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(dest, "w:gz") as t:
            for name in BINARIES:
                stripped = os.path.join(tmp, name)
                subprocess.check_call(["strip", "--strip-debug", "-o", stripped, os.path.join(root, BUILD_DIR, name)])
                t.add(stripped, "%s/%s" % (BUILD_DIR, name))
            stamp_path = os.path.join(tmp, STAMP_NAME)
            with open(stamp_path, "w") as f:
                f.write(stamp)
            t.add(stamp_path, "%s/%s" % (BUILD_DIR, STAMP_NAME))


def install(root, tarball, stamp):
    """(ok, message): the carried binaries in place as build/ and run once, or why not."""
    with tarfile.open(tarball) as t:
        names = t.getnames()
        if any(not n.startswith(BUILD_DIR + "/") or ".." in n for n in names):
            return False, "the tarball holds paths outside %s/" % BUILD_DIR
        carried = t.extractfile("%s/%s" % (BUILD_DIR, STAMP_NAME)).read().decode()
        if carried != stamp:
            return False, "built from other sources than these (run tools/gpu_backlog.sh prepare again)"
        build = os.path.join(root, "build")
        if os.path.exists(build) and not os.path.islink(build):
            return False, "build/ was made on this machine: make keeps it current"
        t.extractall(root)
    if os.path.islink(build):
        os.remove(build)
    os.symlink(BUILD_DIR, build)
    checks = [["build/smezo", "--version"], ["build/smezo_tests", "--gtest_filter=" + SMOKE_TESTS]]
    for argv in checks:
        run = subprocess.run(argv, cwd=root, capture_output=True, text=True)
        out = run.stdout + run.stderr
        if run.returncode != 0 or "no CUDA device: skipped" in out:
            os.remove(build)
            return False, "%s failed here (rc %d): %s" % (" ".join(argv), run.returncode, out.strip()[-600:])
    return True, "the carried binaries run here (%s)" % "; ".join(" ".join(a) for a in checks)


def remove_stale_link(root):
    """A build -> build-gpu link from an earlier call, before make builds build/ itself."""
    build = os.path.join(root, "build")
    if os.path.islink(build):
        os.remove(build)
        shutil.rmtree(os.path.join(root, BUILD_DIR), ignore_errors=True)
