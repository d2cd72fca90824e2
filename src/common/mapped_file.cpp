// MappedFile: input_open (a regular file, never blocking) + mmap(PROT_READ, MAP_PRIVATE); the descriptor then closes.
#include "common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/check.h"
#include "common/input_file.h"

namespace smezo {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path, const char* what) {
  int64_t size = 0;
  const int fd = input_open(path, what, &size);
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = size;
  if (file->size_ > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(file->size_), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw_error("cannot mmap %s (%lld bytes): %s", path.c_str(),
                  static_cast<long long>(file->size_), std::strerror(err));
    }
    file->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::release_pages(const void* p, int64_t bytes) const {
  if (data_ == nullptr || bytes <= 0) return;
  const uintptr_t base = reinterpret_cast<uintptr_t>(data_);
  const uintptr_t end_map = base + static_cast<uintptr_t>(size_);
  uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  uintptr_t end = begin + static_cast<uintptr_t>(bytes);
  if (begin < base) begin = base;
  if (end > end_map) end = end_map;
  if (begin >= end) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  begin -= (begin - base) % page;  // the mapping starts on a page boundary
  madvise(reinterpret_cast<void*>(begin), static_cast<size_t>(end - begin), MADV_DONTNEED);
}

void MappedFile::unmap() {
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
  data_ = nullptr;
  size_ = 0;
}

}  // namespace smezo
