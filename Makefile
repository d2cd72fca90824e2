# smezo build.
#   make            build/smezo (CLI), build/libsmezo.a and build/render_prompts (task prompts
#                   as JSONL for tokenizer oracles); with nvcc also every CUDA source
#   make test       build and run the GoogleTest suites (GPU tests skip without a GPU)
#   make profile    as make, with -lineinfo and NVTX ranges for Nsight
#   make clean
# Knobs: CUDA_ARCH=90a (override GPU detection), NO_CUDA=1 (CPU-only build),
#        DEPS=<dir> (a folder where Debian packages were unpacked with dpkg -x; see tools/deps.sh)

CXX      ?= g++
BUILD    := build
DEPS     ?=
# -ffp-contract=off: the noise spec (src/common/noise_spec.h) must round the same on every
# compiler, so no silent fused multiply-adds on the host.
CXXFLAGS := -std=c++17 -O2 -g -Wall -Wextra -ffp-contract=off -fopenmp -I. -Iinclude -Isrc
LDLIBS   := -lsentencepiece -lpcre2-8 -lpthread
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
GENCODE   := -gencode=arch=compute_$(CUDA_ARCH),code=sm_$(CUDA_ARCH) -gencode=arch=compute_80,code=compute_80
NVCCFLAGS := -std=c++17 -O3 -g -I. -Iinclude -Isrc $(GENCODE) -Xcompiler -Wall,-ffp-contract=off,-fopenmp
ifneq ($(DEPS),)
NVCCFLAGS += -I$(DEPS)/usr/include
endif
CXXFLAGS  += -DSMEZO_WITH_CUDA -I$(CUDA_HOME)/include
LDFLAGS   += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64
LDLIBS    += -lcublas -lcudart
CUDA_STATUS := ✓ CUDA: $(NVCC) (arch sm_$(CUDA_ARCH): $(ARCH_SOURCE))
else
CUDA_STATUS := ✗ CUDA: nvcc not found (or NO_CUDA=1), building the CPU-only program
endif

ifeq ($(PROFILE),1)
NVCCFLAGS += -lineinfo -DSMEZO_NVTX
CXXFLAGS  += -DSMEZO_NVTX
endif

LIB_SRC  := $(filter-out src/cli/main.cpp,$(wildcard src/*/*.cpp))
CLI_SRC  := src/cli/main.cpp
CU_SRC   := $(if $(NVCC),$(wildcard cuda/*.cu),)
TEST_SRC := $(wildcard tests/*.cpp)
TEST_CU  := $(if $(NVCC),$(wildcard tests/*.cu),)

LIB_OBJ  := $(LIB_SRC:%.cpp=$(BUILD)/%.o) $(CU_SRC:%.cu=$(BUILD)/%.cu.o)
TEST_OBJ := $(TEST_SRC:%.cpp=$(BUILD)/%.o) $(TEST_CU:%.cu=$(BUILD)/%.cu.o)

.PHONY: all test profile clean info bench-cpu
all: info $(BUILD)/smezo $(BUILD)/libsmezo.a $(BUILD)/render_prompts

info:
	@echo "smezo build: $(CUDA_STATUS)"
	@test -f $(or $(DEPS),/)/usr/include/sentencepiece_processor.h \
	  && echo "smezo build: ✓ sentencepiece" \
	  || { echo "smezo build: ✗ sentencepiece headers missing: apt-get install libsentencepiece-dev (or tools/deps.sh)"; exit 1; }
	@test -f $(or $(DEPS),/)/usr/include/nlohmann/json.hpp \
	  && echo "smezo build: ✓ nlohmann-json" \
	  || { echo "smezo build: ✗ nlohmann/json.hpp missing: apt-get install nlohmann-json3-dev (or tools/deps.sh)"; exit 1; }
	@test -f $(or $(DEPS),/)/usr/include/pcre2.h \
	  && echo "smezo build: ✓ PCRE2 (BPE pre-tokeniser)" \
	  || { echo "smezo build: ✗ pcre2.h missing: apt-get install libpcre2-dev (or tools/deps.sh)"; exit 1; }
	@test -f $(BLAS_INC)/cblas.h && test -e $(BLAS_LIB)/libopenblas.so \
	  && echo "smezo build: ✓ OpenBLAS (OpenMP): $(abspath $(BLAS_LIB))" \
	  || { echo "smezo build: ✗ OpenBLAS (OpenMP build) missing in $(BLAS_LIB): apt-get install libopenblas-openmp-dev (or tools/deps.sh)"; exit 1; }

profile:
	$(MAKE) PROFILE=1 all

$(BUILD)/libsmezo.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	ar rcs $@ $^

$(BUILD)/smezo: $(BUILD)/src/cli/main.o $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# tools/render_prompts.cpp: the task prompts as JSONL, for tokenizer oracles (tools/bpe_oracle.py)
$(BUILD)/render_prompts: $(BUILD)/tools/render_prompts.o $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# The tests run build/smezo (or $(BUILD)/smezo) and write under $(BUILD)/test_tmp.
$(TEST_OBJ): CXXFLAGS += -DSMEZO_BUILD_DIR='"$(BUILD)"'
$(TEST_OBJ): NVCCFLAGS += -DSMEZO_BUILD_DIR='"$(BUILD)"'

$(BUILD)/smezo_tests: $(TEST_OBJ) $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) -lgtest -lgmock $(LDLIBS)

test: info $(BUILD)/smezo $(BUILD)/smezo_tests
	./$(BUILD)/smezo_tests

# CPU backend throughput at SmolLM2-135M's shape with random weights (tools/cpu_bench.cpp)
bench-cpu: info $(BUILD)/cpu_bench
$(BUILD)/tools/cpu_bench.o: CXXFLAGS += -Itests
$(BUILD)/cpu_bench: $(BUILD)/tools/cpu_bench.o $(BUILD)/tests/model_fixture.o $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# CPU noise benchmark (not part of `all`): tools/noise_bench.cpp
$(BUILD)/noise_bench: tools/noise_bench.cpp $(BUILD)/libsmezo.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)
