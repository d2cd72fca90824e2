// A read-only memory mapping of a whole file (RAII, movable). Checkpoint readers hand out
// pointers into the mapping, so they keep the mapping alive through a shared_ptr
// (WeightSource::keep_alive). An empty file maps to data() == nullptr, size() == 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace smezo {

class MappedFile {
 public:
  // Maps the whole file read-only. Throws smezo::Error naming the path and the OS reason
  // ("cannot open <path>: No such file or directory") when it cannot.
  static std::shared_ptr<MappedFile> open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Drops the process's pages of [p, p + bytes) (a range inside the mapping, widened to whole
  // pages) with madvise(MADV_DONTNEED), so data already consumed (uploaded to a backend) stops
  // counting in the process's resident memory. The mapping stays valid: it is read-only and
  // private, so a later read faults the page back in from the file (or the page cache).
  // Ranges outside the mapping are clipped; best effort (a failing madvise changes nothing).
  void release_pages(const void* p, int64_t bytes) const;

 private:
  MappedFile() = default;
  void unmap();

  const uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  std::string path_;
};

}  // namespace smezo
