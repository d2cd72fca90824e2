#include "common/sha256.h"

#include <sha2.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/check.h"
#include "common/input_file.h"

namespace smezo {

std::string file_sha256_hex(const std::string& path) {
  int64_t size = 0;
  const int fd = input_open(path, "file to hash", &size);
  SHA2_CTX ctx;
  SHA256Init(&ctx);
  std::vector<uint8_t> chunk(size_t{1} << 20);
  for (;;) {
    const ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw_error("cannot read %s to hash it: %s", path.c_str(), std::strerror(err));
    }
    SHA256Update(&ctx, chunk.data(), static_cast<size_t>(got));
  }
  ::close(fd);
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256Final(digest, &ctx);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : digest) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

}  // namespace smezo
