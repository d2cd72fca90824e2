// Embedding smezo in another program: fine-tune the bundled stories260K for a few steps on
// SST-2 through the public API alone (include/smezo/), linked against build/libsmezo.a, then
// rebuild the run's weights from its seed log (smezo::replay) and check they are the checkpoint's.
// `make test` builds and runs it:
//   g++ -std=c++17 -fopenmp -Iinclude docs/examples/train_embedded.cpp build/libsmezo.a
//       -lsentencepiece -lpthread   (and -lcudart -ldl in CUDA builds: cuBLAS is opened on first use)
//   ./train_embedded OUT_DIR
#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

#include "smezo/replay.h"
#include "smezo/train.h"
#include "smezo/version.h"

static std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

int main(int argc, char** argv) {
  smezo::TrainOptions o;  // model_path "" = the bundled stories260K, on the CPU
  o.task = "sst2";
  o.n_train = 32, o.n_dev = 16, o.n_test = 16;
  o.max_len = 48;
  o.batch = 4;
  o.steps = 5;
  o.eval_every = 0;
  o.progress_every = 5;
  o.out_dir = argc > 1 ? argv[1] : "runs/embedded";
  o.spsa.method = smezo::METHOD_SMEZO;
  o.spsa.lr = 2e-3f;
  try {
    const smezo::TrainResult r = smezo::train(o);
    std::printf("smezo %s embedded: %lld steps, loss %.4f -> %.4f, dev acc %.4f, test acc %.4f\n", SMEZO_VERSION,
                (long long)r.steps_done, r.first_loss, r.last_loss, r.final_dev_acc, r.test_acc);
    smezo::ReplayOptions ro;  // base "" = the bundled stories260K, the run's
    ro.seed_log = o.out_dir + "/seed_log.txt";
    ro.out = o.out_dir + "/replayed";
    const smezo::ReplayResult rr = smezo::replay(ro);
    const std::string weights = file_bytes(o.out_dir + "/checkpoint/model.safetensors");
    const bool same = !weights.empty() && weights == file_bytes(ro.out + "/model.safetensors");
    std::printf("replayed %lld steps -> %s: %s the run's checkpoint\n", (long long)rr.steps, ro.out.c_str(),
                same ? "byte for byte" : "DIFFERENT FROM");
    return r.steps_done == o.steps && rr.steps == o.steps && same ? 0 : 1;
  } catch (const std::exception& e) {  // smezo's errors are std::runtime_error, one line each
    std::fprintf(stderr, "train_embedded: %s\n", e.what());
    return 1;
  }
}
