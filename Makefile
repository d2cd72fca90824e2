# smezo build.
#   make            build/smezo (CLI), build/libsmezo.a, build/render_prompts (task prompts
#                   as JSONL for tokenizer oracles) and build/patch_scales (a scale-patched GGUF
#                   for the export oracle); with nvcc also every CUDA source
#   make test       build and run the GoogleTest suites (GPU tests skip without a GPU)
#   make profile    as make, with -lineinfo and NVTX ranges for Nsight
#   make fuzz       build the libFuzzer targets (tests/fuzz/, clang, ASan+UBSan, in build-fuzz/)
#                   and run each for FUZZ_SECONDS (default 300); make fuzz-ci: FUZZ_CI_SECONDS each
#   make emu        the emulated CUDA target (tests/emu/README.md): the same cuda/*.cu, tests/*.cu
#                   and bench/*.cu compiled by the host compiler against tests/emu/ and run on the
#                   CPU, in build-emu/ (EMU_SAN=1: ASan+UBSan, in build-emu-san/)
#   make emu-test   every CUDA test of the suite, emulated (EMU_SCHED=fwd|rev|random:SEED)
#   make san-test   the CPU suite under ASan+UBSan, built with NO_CUDA=1 NO_MPI=1 in build-asan/
#   make clean
# Knobs: CUDA_ARCH=90a (override GPU detection), NO_CUDA=1 (CPU-only build), NO_MPI=1 (no
#        multi-rank training even where Open MPI is installed), SAN=1 (ASan+UBSan; with its own
#        BUILD=folder),
#        DEPS=<dir> (a folder where Debian packages were unpacked with dpkg -x; see tools/deps.sh)

CXX      ?= g++
BUILD    := build
DEPS     ?=
# -ffp-contract=off: the noise spec (src/common/noise_spec.h) must round the same on every
# compiler, so no silent fused multiply-adds on the host.
CXXFLAGS := -std=c++17 -O2 -g -Wall -Wextra -ffp-contract=off -fopenmp -I. -Iinclude -Isrc
# libmd: SHA-256 of a base GGUF (src/common/sha256.cpp).
LDLIBS   := -lsentencepiece -lpcre2-8 -lmd -lpthread
# OpenBLAS, the OpenMP build, named by its own folder so the build does not depend on which
# BLAS update-alternatives points libblas/libopenblas at (the CPU linear, src/cpu/cpu_gemm.cpp,
# relies on its OpenMP threading model).
BLAS_INC := $(DEPS)/usr/include/x86_64-linux-gnu/openblas-openmp
BLAS_LIB := $(DEPS)/usr/lib/x86_64-linux-gnu/openblas-openmp
CXXFLAGS += -I$(BLAS_INC)
LDFLAGS  += -L$(BLAS_LIB) -Wl,-rpath,$(abspath $(BLAS_LIB))
LDLIBS   += -lopenblas
ifneq ($(DEPS),)
CXXFLAGS += -I$(DEPS)/usr/include
# RPATH (not RUNPATH) so libsentencepiece finds its own protobuf-lite in DEPS too
LDFLAGS  += -L$(DEPS)/usr/lib/x86_64-linux-gnu -Wl,--disable-new-dtags,-rpath,$(abspath $(DEPS))/usr/lib/x86_64-linux-gnu
endif

# ---- CUDA detection (printed, never silent)
ifeq ($(NO_CUDA),1)
NVCC :=
else
NVCC := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
endif
GPU_CC := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d '.')
ifeq ($(CUDA_ARCH),)
ifneq ($(GPU_CC),)
ifeq ($(GPU_CC),90)
CUDA_ARCH := 90a
else
CUDA_ARCH := $(GPU_CC)
endif
ARCH_SOURCE := detected GPU
else
CUDA_ARCH := 90a
ARCH_SOURCE := no GPU found, default target
endif
else
ARCH_SOURCE := CUDA_ARCH override
endif

ifneq ($(NVCC),)
CUDA_HOME := $(patsubst %/bin/nvcc,%,$(NVCC))
# The target arch plus a portable PTX for sm_80+ GPUs.
PTX_GENCODE := -gencode=arch=compute_80,code=compute_80
GENCODE   := -gencode=arch=compute_$(CUDA_ARCH),code=sm_$(CUDA_ARCH) $(PTX_GENCODE)
NVCCFLAGS := -std=c++17 -O3 -g -I. -Iinclude -Isrc $(GENCODE) -Xcompiler -Wall,-ffp-contract=off,-fopenmp
ifneq ($(DEPS),)
NVCCFLAGS += -I$(DEPS)/usr/include
endif
CXXFLAGS  += -DSMEZO_WITH_CUDA -I$(CUDA_HOME)/include
LDFLAGS   += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64
# cuBLAS is dlopen()ed on first use (cuda/cublas_lazy.cu), so CPU runs never map libcublasLt
LDLIBS    += -lcudart -ldl
CUDA_STATUS := ✓ CUDA: $(NVCC) (arch sm_$(CUDA_ARCH): $(ARCH_SOURCE))
else
CUDA_STATUS := ✗ CUDA: nvcc not found (or NO_CUDA=1), building the CPU-only program
endif

# ---- MPI detection (optional: data- and pipeline-parallel training under mpirun/srun; printed, never silent).
# The C API only (OMPI_SKIP_MPICXX): the flags of Open MPI's wrapper compiler (or pkg-config), without the
# deprecated C++ bindings. src/dist/world_mpi.cpp is built with -DSMEZO_MPI, world_single.cpp
# without it (a one-process world that refuses to run as one of several).
ifneq ($(NO_MPI),1)
MPI_CFLAGS := $(shell mpicxx --showme:compile 2>/dev/null || pkg-config --cflags ompi-cxx 2>/dev/null)
MPI_LIBS   := $(filter-out -lmpi_cxx,$(shell mpicxx --showme:link 2>/dev/null || pkg-config --libs ompi-cxx 2>/dev/null))
endif
ifneq ($(findstring -lmpi,$(MPI_LIBS)),)
CXXFLAGS   += -DSMEZO_MPI -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX $(MPI_CFLAGS)
LDLIBS     += $(MPI_LIBS)
MPI_STATUS := ✓ MPI: $(shell mpirun --version 2>/dev/null | head -n1) (mpirun -np N smezo train ...: data and pipeline parallel)
else
MPI_STATUS := ✗ MPI: no mpicxx/ompi-cxx (or NO_MPI=1): one process only (apt-get install libopenmpi-dev openmpi-bin, or tools/deps.sh install)
endif

# SAN=1: the CPU build under ASan+UBSan (use its own BUILD folder, e.g. BUILD=build-asan NO_CUDA=1).
# -static-libubsan: with both runtimes shared (GCC 12), UBSan ignores UBSAN_OPTIONS=log_path
# and reports on stderr only (its call that sets the path binds to libasan's copy), where a CLI
# run's report is swallowed by the test that captures its output; linked statically it writes
# its log file, and ASan still leaves its SUMMARY line in its own (make san-test counts both).
# -g1: line tables, all a sanitizer's stack trace needs (file:line), and a quarter less compile time
# than -g (src/train/trainer.cpp 20.8 s against 28.0 s).
ifeq ($(SAN),1)
CXXFLAGS += -O1 -g1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=address,undefined -static-libubsan
endif

ifeq ($(PROFILE),1)
NVCCFLAGS += -lineinfo -DSMEZO_NVTX
CXXFLAGS  += -DSMEZO_NVTX
endif

# The library (libsmezo.a) is everything but the CLI: nothing in it may depend on src/cli/.
LIB_SRC  := $(filter-out src/cli/%,$(wildcard src/*/*.cpp))
CLI_SRC  := $(wildcard src/cli/*.cpp)
CU_SRC   := $(if $(NVCC),$(wildcard cuda/*.cu),)
# bench/: what measures the kernels and the model (smezo bench), outside the production
# library: build/libsmezo_bench.a, linked into the CLI and the tests beside libsmezo.a. The
# benchmark programs of their own (a main each: make bench-cpu) are not in it.
BENCH_PROGRAMS := bench/cpu_bench.cpp bench/noise_bench.cpp bench/op_bench_main.cpp
BENCH_SRC := $(filter-out $(BENCH_PROGRAMS),$(wildcard bench/*.cpp)) $(if $(NVCC),$(wildcard bench/*.cu),)
TEST_SRC := $(wildcard tests/*.cpp)
TEST_CU  := $(if $(NVCC),$(wildcard tests/*.cu),)

LIB_OBJ  := $(LIB_SRC:%.cpp=$(BUILD)/%.o) $(CU_SRC:%.cu=$(BUILD)/%.cu.o)
CLI_OBJ  := $(CLI_SRC:%.cpp=$(BUILD)/%.o)
BENCH_OBJ := $(patsubst %.cpp,$(BUILD)/%.o,$(patsubst %.cu,$(BUILD)/%.cu.o,$(BENCH_SRC)))
TEST_OBJ := $(TEST_SRC:%.cpp=$(BUILD)/%.o) $(TEST_CU:%.cu=$(BUILD)/%.cu.o)

# The git commit `smezo --version` prints ("-dirty" when tracked files changed; "" outside git).
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(if $(shell git status --porcelain --untracked-files=no 2>/dev/null),-dirty,)

.PHONY: all test san-test profile clean info fuzz fuzz-ci fuzz-build fuzz-tools bench-cpu emu emu-info emu-test FORCE
all: info $(BUILD)/smezo $(BUILD)/libsmezo.a $(BUILD)/render_prompts $(BUILD)/patch_scales

info:
	@echo "smezo build: $(CUDA_STATUS)"
	@echo "smezo build: $(MPI_STATUS)"
	@test -f $(or $(DEPS),/)/usr/include/sentencepiece_processor.h \
	  && echo "smezo build: ✓ sentencepiece" \
	  || { echo "smezo build: ✗ sentencepiece headers missing: apt-get install libsentencepiece-dev (or tools/deps.sh)"; exit 1; }
	@test -f $(or $(DEPS),/)/usr/include/nlohmann/json.hpp \
	  && echo "smezo build: ✓ nlohmann-json" \
	  || { echo "smezo build: ✗ nlohmann/json.hpp missing: apt-get install nlohmann-json3-dev (or tools/deps.sh)"; exit 1; }
	@test -f $(or $(DEPS),/)/usr/include/pcre2.h \
	  && echo "smezo build: ✓ PCRE2 (BPE pre-tokeniser)" \
	  || { echo "smezo build: ✗ pcre2.h missing: apt-get install libpcre2-dev (or tools/deps.sh)"; exit 1; }
	@test -f $(or $(DEPS),/)/usr/include/sha2.h \
	  && echo "smezo build: ✓ libmd (SHA-256)" \
	  || { echo "smezo build: ✗ sha2.h missing: apt-get install libmd-dev (or tools/deps.sh)"; exit 1; }
	@test -f $(or $(DEPS),/)/usr/include/CLI/CLI.hpp \
	  && echo "smezo build: ✓ CLI11" \
	  || { echo "smezo build: ✗ CLI/CLI.hpp missing: apt-get install libcli11-dev (or tools/deps.sh)"; exit 1; }
	@test -f $(BLAS_INC)/cblas.h && test -e $(BLAS_LIB)/libopenblas.so \
	  && echo "smezo build: ✓ OpenBLAS (OpenMP): $(abspath $(BLAS_LIB))" \
	  || { echo "smezo build: ✗ OpenBLAS (OpenMP build) missing in $(BLAS_LIB): apt-get install libopenblas-openmp-dev (or tools/deps.sh)"; exit 1; }

profile:
	$(MAKE) PROFILE=1 all

# rm first: `ar r` keeps the members of objects that no longer exist (a file moved or deleted).
$(BUILD)/libsmezo.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libsmezo_bench.a: $(BENCH_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/smezo: $(CLI_OBJ) $(BUILD)/libsmezo_bench.a $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# tools/oracles/render_prompts.cpp: the task prompts as JSONL, for tokenizer oracles (tools/oracles/bpe_oracle.py)
$(BUILD)/render_prompts: $(BUILD)/tools/oracles/render_prompts.o $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)
# tools/oracles/patch_scales.cpp: a GGUF with seeded scales patched in, for tools/oracles/gguf_export_oracle.py
$(BUILD)/patch_scales: $(BUILD)/tools/oracles/patch_scales.o $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# Rewritten only when the commit changes, so only version.o recompiles. (The temporary file is
# the shell's own: two makes at once, such as CI's two emulated runs, each check the stamp.)
$(BUILD)/gen/smezo_git.h: FORCE
	@mkdir -p $(dir $@)
	@t=$@.tmp.$$$$; echo '#define SMEZO_GIT_COMMIT "$(GIT_COMMIT)"' > $$t; cmp -s $$t $@ && rm -f $$t || mv -f $$t $@
$(BUILD)/src/cli/version.o: $(BUILD)/gen/smezo_git.h

# The objects that change with MPI on or off rebuild when it flips (a stamp like the one above).
$(BUILD)/gen/mpi_status: FORCE
	@mkdir -p $(dir $@)
	@t=$@.tmp.$$$$; echo '$(MPI_STATUS)' > $$t; cmp -s $$t $@ && rm -f $$t || mv -f $$t $@
$(BUILD)/src/dist/world_mpi.o $(BUILD)/src/dist/world_single.o $(BUILD)/src/cli/version.o \
  $(BUILD)/tests/test_mpi.o: $(BUILD)/gen/mpi_status
$(BUILD)/src/cli/version.o: CXXFLAGS += -I$(BUILD)/gen

# The embedding example: the public headers (include/ only, no src/) and libsmezo.a.
$(BUILD)/examples/train_embedded: docs/examples/train_embedded.cpp $(BUILD)/libsmezo.a include/smezo/*.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -fopenmp -Iinclude $(if $(DEPS),-I$(DEPS)/usr/include) -o $@ $< \
	  $(BUILD)/libsmezo.a $(LDFLAGS) $(LDLIBS)

# The suite's own code at -O1 with line tables only (-g1): half the compile time of -O2 -g, and the
# library it tests keeps -O2 -g. Its .cu files for the build's GPU arch alone: the portable PTX is
# the product library's, for GPUs the build did not see.
TEST_CXX_OPT := -O1 -g1
$(TEST_SRC:%.cpp=$(BUILD)/%.o): CXXFLAGS += $(TEST_CXX_OPT)
$(TEST_CU:%.cu=$(BUILD)/%.cu.o): NVCCFLAGS := $(filter-out $(PTX_GENCODE),$(NVCCFLAGS))
# The tests run build/smezo (or $(BUILD)/smezo) and write under $(BUILD)/test_tmp.
$(TEST_OBJ): CXXFLAGS += -DSMEZO_BUILD_DIR='"$(BUILD)"'
$(TEST_OBJ): NVCCFLAGS += -DSMEZO_BUILD_DIR='"$(BUILD)"'

$(BUILD)/smezo_tests: $(TEST_OBJ) $(BUILD)/libsmezo_bench.a $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) -lgtest -lgmock $(LDLIBS)

# The suite runs as TEST_SHARDS processes side by side (tests/run_shards.sh): it keeps about one
# core busy, so 2 shards halve it on 2 cores. 1 where a GPU was found (its tests time kernels).
TEST_SHARDS ?= $(if $(GPU_CC),1,2)
test: info $(BUILD)/smezo $(BUILD)/smezo_tests $(BUILD)/examples/train_embedded
	tests/run_shards.sh ./$(BUILD)/smezo_tests $(TEST_SHARDS)
	rm -rf $(BUILD)/test_tmp/embedded && ./$(BUILD)/examples/train_embedded $(BUILD)/test_tmp/embedded

# The benchmark programs (not part of `all`; bench/cpu_bench.cpp, noise_bench.cpp, op_bench_main.cpp):
#   build/cpu_bench    CPU backend throughput at SmolLM2-135M's shape with random weights, op by op
#   build/noise_bench  the CPU noise paths: generator, cpu_read_param, update (normals/s)
#   build/op_bench     every case of bench/op_cases.h (the conformance test's list) timed on one
#                      backend (--device cpu|cuda)
bench-cpu: info $(BUILD)/cpu_bench $(BUILD)/noise_bench $(BUILD)/op_bench
$(BUILD)/cpu_bench: $(BUILD)/bench/cpu_bench.o $(BUILD)/libsmezo_bench.a $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)
$(BUILD)/noise_bench: $(BUILD)/bench/noise_bench.o $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)
$(BUILD)/op_bench: $(BUILD)/bench/op_bench_main.o $(BUILD)/libsmezo_bench.a $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

# ---- make san-test: the CPU suite once under ASan+UBSan, in build-asan/, built with NO_CUDA=1
# (the GPU cases are not compiled; the emulated CUDA suite runs sanitized in emu-test EMU_SAN=1)
# and NO_MPI=1: the build whose MPI-refusal test runs (MpiTrain.BuildWithoutMpiRefusesSeveralProcesses),
# with no Open MPI in the processes (its own allocations would be LeakSanitizer reports); the
# multi-rank tests skip there. Every sanitized process the suite starts (the CLI runs too)
# leaves a file in $(SAN_REPORTS)/ when it reports (see -static-libubsan above): a CLI run whose
# test expects a non-zero exit cannot hide a finding, since any file there fails the target.
# Checked with throw-away tests whose child smezo_tests hit UB, a heap overflow and a leak
# under a test expecting rc != 0: three files, target failed.
SAN_BUILD   := build-asan
SAN_REPORTS := $(abspath $(SAN_BUILD))/san-reports
SAN_ENV     := ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_leaks=1:log_path=$(SAN_REPORTS)/asan \
               UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(SAN_REPORTS)/ubsan
# SAN_EXCLUDE: tests left out of san-test (gtest names, ':'-separated; none by default). CI
# leaves out the few that are long only because of the real model or their number of runs
# (.ci/run, to stay within its hour); the plain suite runs them, and lighter tests take the
# same code paths under the sanitizers.
SAN_EXCLUDE ?=
san-test:
	@rm -rf $(SAN_REPORTS) && mkdir -p $(SAN_REPORTS)
	@$(SAN_ENV) $(if $(SAN_EXCLUDE),GTEST_FILTER='-$(SAN_EXCLUDE)') $(MAKE) --no-print-directory SAN=1 NO_CUDA=1 NO_MPI=1 BUILD=$(SAN_BUILD) test; rc=$$?; \
	  if [ -n "$$(ls $(SAN_REPORTS))" ]; then \
	    for f in $(SAN_REPORTS)/*; do echo "san-test: ---- $$f"; cat "$$f"; done; \
	    echo "san-test: ✗ $$(ls $(SAN_REPORTS) | wc -l) sanitizer report(s), above (where a file holds only ASan's"; \
	    echo "san-test:   SUMMARY line, the full report is on that process's stderr: the log above for smezo_tests,"; \
	    echo "san-test:   the output a test captured for a CLI run)"; exit 1; \
	  fi; \
	  [ $$rc -eq 0 ] && echo "san-test: ✓ no sanitizer report" || exit $$rc

clean:
	rm -rf $(BUILD) build-emu build-emu-san $(SAN_BUILD)

FORCE:
# ---- fuzzing (libFuzzer): the readers of every file smezo takes from a user, under ASan and
# UBSan. Only the library folders the readers live in are compiled (with clang, into their
# own archive, so a target links just what it uses). Each target runs on a working corpus in
# $(FUZZ_BUILD)/corpus/<target>, seeded from tests/fuzz/corpus/<target>; a crash, sanitizer
# report, leak, hang (-timeout) or oversized allocation stops it with a reproducer in
# $(FUZZ_BUILD)/artifacts/ and fails the make. A finding becomes a fixed bug plus a test in
# tests/test_*.cpp with the input committed.
FUZZ_BUILD      ?= build-fuzz
FUZZ_CXX        ?= clang++-14
FUZZ_SECONDS    ?= 300
FUZZ_CI_SECONDS ?= 40
FUZZ_TARGETS    := safetensors config hf_dir llama2c gguf task_data task_files adapter_folder tokenizer \
                   tokenizer_json seed_log
FUZZ_CXXFLAGS   := -std=c++17 -O1 -gline-tables-only -Wall -Wextra -fsanitize=address,undefined \
                   -fno-sanitize-recover=all -fsanitize=fuzzer-no-link -I. -Iinclude -Isrc
FUZZ_LDLIBS     := -lsentencepiece -lpcre2-8 -lmd -lpthread
ifneq ($(DEPS),)
FUZZ_CXXFLAGS += -I$(DEPS)/usr/include
FUZZ_LDLIBS   := -L$(DEPS)/usr/lib/x86_64-linux-gnu -Wl,-rpath,$(abspath $(DEPS))/usr/lib/x86_64-linux-gnu $(FUZZ_LDLIBS)
endif
FUZZ_LIB_SRC    := $(wildcard src/common/*.cpp src/backend/*.cpp src/formats/*.cpp src/model/*.cpp \
                   src/tokenizer/*.cpp src/tasks/*.cpp) src/run/summary.cpp src/run/seed_log.cpp src/run/number_format.cpp \
                   src/train/checkpoint.cpp src/train/checkpoint_lora.cpp src/train/checkpoint_prefix.cpp \
                   src/train/adapter_folder.cpp src/train/adapter_base.cpp src/train/spsa.cpp \
                   src/train/option_names.cpp src/train/train_options.cpp
FUZZ_LIB_OBJ    := $(FUZZ_LIB_SRC:%.cpp=$(FUZZ_BUILD)/%.o)
FUZZ_BINS       := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
# -malloc_limit_mb: one allocation above it is a finding (a size taken from a file unchecked)
FUZZ_RUN_FLAGS  := -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1

$(FUZZ_BUILD)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/libsmezo_fuzz.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.cpp tests/fuzz/fuzz_util.h $(FUZZ_BUILD)/libsmezo_fuzz.a
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/libsmezo_fuzz.a $(FUZZ_LDLIBS)

fuzz-tools:
	@command -v $(FUZZ_CXX) >/dev/null || { echo "fuzz: ✗ $(FUZZ_CXX) not found: apt-get install clang libclang-rt-14-dev (tools/deps.sh install)"; exit 1; }
$(FUZZ_LIB_OBJ) $(FUZZ_BINS): | fuzz-tools

fuzz-build: $(FUZZ_BINS)

# $(1): seconds per target
define fuzz_run_all
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts; \
	  dict="-dict=tests/fuzz/smezo.dict"; case $$t in llama2c|gguf|tokenizer) dict="";; esac; \
	  echo "fuzz: $$t for $(1) s"; \
	  ./$(FUZZ_BUILD)/fuzz_$$t $(FUZZ_RUN_FLAGS) -max_total_time=$(1) $$dict \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t- $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t \
	    > $(FUZZ_BUILD)/$$t.log 2>&1 \
	    || { tail -n 60 $(FUZZ_BUILD)/$$t.log; echo "fuzz: ✗ $$t found a bug (reproducer in $(FUZZ_BUILD)/artifacts/)"; exit 1; }; \
	  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" $(FUZZ_BUILD)/$$t.log | tr '\n' ' '; echo; \
	done
endef

fuzz: fuzz-build
	$(call fuzz_run_all,$(FUZZ_SECONDS))

fuzz-ci: fuzz-build
	$(call fuzz_run_all,$(FUZZ_CI_SECONDS))

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

ifneq ($(filter fuzz%,$(MAKECMDGOALS)),)
-include $(shell find $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
endif

# ---- the emulated CUDA target (tests/emu/README.md). No nvcc and no GPU needed: every .cu file
# is rewritten by tests/emu/launch_rewrite (only the <<<>>> launches and extern __shared__
# declarations change, line for line, with #line) and compiled by $(CXX) with
# tests/emu/emu_prelude.h force-included; the CUDA headers resolve to tests/emu/include; kernels
# run as fibers on OpenMP threads, cuBLAS is computed by OpenBLAS. Everything it prints says
# "emulated": it shows logic, indexing, barriers, warp collectives and API use, never speed or
# GPU numerics. EMU_SAN=1 adds ASan+UBSan (fiber-aware), in its own build folder.
COMMA        := ,
EMPTY        :=
SPACE        := $(EMPTY) $(EMPTY)
LPAREN       := (
RPAREN       := )
EMU_PLAIN    := build-emu
EMU_BUILD    := $(if $(filter 1,$(EMU_SAN)),build-emu-san,$(EMU_PLAIN))
# Host-only code (src/, the CLI, bench/*.cpp, tests/*.cpp) is compiled once, plainly, into
# $(EMU_PLAIN); device code (.cu files and the emulator itself) into $(EMU_BUILD), where
# EMU_SAN=1 instruments it with ASan+UBSan (-O1: the sanitized build stays quick to compile).
EMU_SANFLAGS := $(if $(filter 1,$(EMU_SAN)),-O1 -fsanitize=address$(COMMA)undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
EMU_CXXFLAGS := -Itests/emu/include $(filter-out -DSMEZO_WITH_CUDA -I$(CUDA_HOME)/include,$(CXXFLAGS)) \
                -DSMEZO_WITH_CUDA -DSMEZO_EMU
EMU_DEV_CXXFLAGS = $(EMU_CXXFLAGS) $(EMU_SANFLAGS)
EMU_LDFLAGS  := $(filter-out -L$(CUDA_HOME)/lib64 -Wl$(COMMA)-rpath$(COMMA)$(CUDA_HOME)/lib64,$(LDFLAGS)) $(EMU_SANFLAGS)
EMU_LDLIBS   := $(filter-out -lcudart,$(LDLIBS)) -lboost_context
EMU_RT_SRC   := $(filter-out tests/emu/launch_rewrite.cpp,$(wildcard tests/emu/*.cpp))
EMU_CU_ALL   := $(wildcard cuda/*.cu)
EMU_LIB_OBJ  := $(LIB_SRC:%.cpp=$(EMU_PLAIN)/%.o) $(EMU_CU_ALL:%.cu=$(EMU_BUILD)/%.cu.o) \
                $(EMU_RT_SRC:%.cpp=$(EMU_BUILD)/%.o)
EMU_CLI_OBJ  := $(CLI_SRC:%.cpp=$(EMU_PLAIN)/%.o)
EMU_BENCH_OBJ := $(patsubst %.cpp,$(EMU_PLAIN)/%.o,$(filter-out $(BENCH_PROGRAMS),$(wildcard bench/*.cpp))) \
                 $(patsubst %.cu,$(EMU_BUILD)/%.cu.o,$(wildcard bench/*.cu))
EMU_TEST_CU  := $(wildcard tests/*.cu) $(wildcard tests/emu/tests/*.cu)
# The emulated test binary holds only what emu-test runs (below), so it compiles about a quarter
# of the suite's .cpp files, not all of them again: every CUDA test file, the .cpp test files
# with a test whose suite or name says Cuda, and those with no test (main, fixtures, helpers).
EMU_TEST_CPP := $(sort $(shell grep -lE '^TEST(_F|_P)?[$(LPAREN)][^$(RPAREN)]*Cuda' $(TEST_SRC)) \
                       $(shell grep -LE '^TEST(_F|_P)?[$(LPAREN)]' $(TEST_SRC)))
EMU_TEST_OBJ := $(EMU_TEST_CPP:%.cpp=$(EMU_PLAIN)/%.o) $(EMU_TEST_CU:%.cu=$(EMU_BUILD)/%.cu.o)
# Every CUDA test: the suites of the .cu test files, the CUDA cases of .cpp files (named
# *Cuda*), and the emulator's own tests (Emu*).
EMU_TEST_FILTER := $(subst $(SPACE),:,$(sort $(patsubst %,%.*,$(shell awk -F'[\050,]' '/^TEST(_F|_P)?\050/ {print $$2}' $(EMU_TEST_CU))))):*Cuda*

emu: info emu-info $(EMU_BUILD)/smezo $(EMU_BUILD)/smezo_tests
# The sanitized test binary's CLI tests run the plain emulated CLI (the tests' objects are shared).
	@$(if $(filter 1,$(EMU_SAN)),$(MAKE) --no-print-directory EMU_SAN=0 $(EMU_PLAIN)/smezo $(EMU_PLAIN)/launch_rewrite,true)

emu-info:
	@test -f $(or $(DEPS),/)/usr/include/boost/context/detail/fcontext.hpp \
	  && echo "smezo build: ✓ Boost.Context: the emulated CUDA target ($(EMU_BUILD)/, no GPU or nvcc needed)" \
	  || { echo "smezo build: ✗ Boost.Context missing (the emulated CUDA target's fibers): apt-get install libboost-context-dev (or tools/deps.sh install)"; exit 1; }

emu-test: emu
	@echo "emu-test: schedule $${EMU_SCHED:-fwd}$(if $(filter 1,$(EMU_SAN)), with ASan+UBSan,); tests: $(EMU_TEST_FILTER)"
	./$(EMU_BUILD)/smezo_tests --gtest_filter='$(EMU_TEST_FILTER)'

$(EMU_BUILD)/launch_rewrite: tests/emu/launch_rewrite.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -o $@ $<

# .cu -> host C++ (same lines) -> object, with the warnings nvcc's host pass gives (-Wall;
# #pragma unroll is nvcc's; #line makes g++ take the file for a header, hence subobject-linkage). The .cuh headers are rewritten too (they may hold __shared__
# variables) and found first: quoted includes search $(EMU_BUILD)/gen, then the .cu file's
# own folder.
EMU_CUH := $(patsubst %,$(EMU_BUILD)/gen/%,$(wildcard cuda/*.cuh))
# The rewritten sources are kept (not deleted as make's intermediate files): deleted, the next
# make of the same folder (EMU_SCHED=rev after fwd) wrote them again and recompiled every .cu.
.PRECIOUS: $(EMU_BUILD)/gen/%.cu.cpp $(EMU_BUILD)/gen/%.cuh
$(EMU_BUILD)/gen/%.cu.cpp: %.cu $(EMU_BUILD)/launch_rewrite
	@mkdir -p $(dir $@)
	./$(EMU_BUILD)/launch_rewrite $< $@
$(EMU_BUILD)/gen/%.cuh: %.cuh $(EMU_BUILD)/launch_rewrite
	@mkdir -p $(dir $@)
	./$(EMU_BUILD)/launch_rewrite $< $@

$(EMU_BUILD)/%.cu.o: $(EMU_BUILD)/gen/%.cu.cpp $(EMU_CUH)
	@mkdir -p $(dir $@)
	$(CXX) $(filter-out -Wextra,$(EMU_DEV_CXXFLAGS)) -Wno-unknown-pragmas -Wno-subobject-linkage -iquote $(EMU_BUILD)/gen -iquote $(dir $*) -iquote cuda -include tests/emu/emu_prelude.h -MMD -MP -c $< -o $@

$(EMU_PLAIN)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -MMD -MP -c $< -o $@
# In a CUDA build (nvcc found: the CPU objects are compiled with -DSMEZO_WITH_CUDA too) the
# library's, the CLI's and bench/'s host objects that include no CUDA header are the CPU build's
# own, copied by tests/emu/host_object.sh (it compiles the others); not the tests', which are
# built with their folder's name (SMEZO_BUILD_DIR).
ifneq ($(NVCC),)
EMU_HOST_REUSED := $(LIB_SRC:%.cpp=$(EMU_PLAIN)/%.o) $(CLI_SRC:%.cpp=$(EMU_PLAIN)/%.o) \
                   $(patsubst %.cpp,$(EMU_PLAIN)/%.o,$(filter-out $(BENCH_PROGRAMS),$(wildcard bench/*.cpp)))
$(EMU_HOST_REUSED): $(EMU_PLAIN)/%.o: $(BUILD)/%.o
	@mkdir -p $(dir $@)
	@tests/emu/host_object.sh $< $@ $(CXX) $(EMU_CXXFLAGS) -MMD -MP -c $*.cpp -o $@
endif
$(EMU_BUILD)/tests/emu/%.o: tests/emu/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_DEV_CXXFLAGS) -MMD -MP -c $< -o $@

$(EMU_PLAIN)/src/cli/version.o: $(BUILD)/gen/smezo_git.h $(BUILD)/gen/mpi_status
$(EMU_PLAIN)/src/cli/version.o: EMU_CXXFLAGS += -I$(BUILD)/gen
$(EMU_PLAIN)/src/dist/world_mpi.o $(EMU_PLAIN)/src/dist/world_single.o $(EMU_PLAIN)/tests/test_mpi.o: $(BUILD)/gen/mpi_status
$(EMU_TEST_OBJ): EMU_CXXFLAGS += -DSMEZO_BUILD_DIR='"$(EMU_PLAIN)"'
$(EMU_TEST_CPP:%.cpp=$(EMU_PLAIN)/%.o): EMU_CXXFLAGS += $(TEST_CXX_OPT)

$(EMU_BUILD)/libsmezo.a: $(EMU_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(EMU_BUILD)/libsmezo_bench.a: $(EMU_BENCH_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(EMU_BUILD)/smezo: $(EMU_CLI_OBJ) $(EMU_BUILD)/libsmezo_bench.a $(EMU_BUILD)/libsmezo.a
	$(CXX) $(EMU_DEV_CXXFLAGS) -o $@ $^ $(EMU_LDFLAGS) $(EMU_LDLIBS)
$(EMU_BUILD)/smezo_tests: $(EMU_TEST_OBJ) $(EMU_BUILD)/libsmezo_bench.a $(EMU_BUILD)/libsmezo.a
	$(CXX) $(EMU_DEV_CXXFLAGS) -o $@ $^ $(EMU_LDFLAGS) -lgtest -lgmock $(EMU_LDLIBS)

ifneq ($(filter emu%,$(MAKECMDGOALS)),)
-include $(shell find $(EMU_PLAIN) $(EMU_BUILD) -name '*.d' 2>/dev/null | sort -u)
endif
