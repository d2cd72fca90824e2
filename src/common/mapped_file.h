// A read-only memory mapping of a whole file (RAII, movable, shared); an empty file maps to nullptr, 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace smezo {

class MappedFile {
 public:
  // Throws smezo::Error naming the path and the OS reason; refuses all but a regular file (input_open).
  // what: the file's role in messages ("model", "tokenizer").
  static std::shared_ptr<MappedFile> open(const std::string& path, const char* what = "file");

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // madvise(MADV_DONTNEED) on [p, p + bytes)'s whole pages: not resident, faults back in. Best effort.
  void release_pages(const void* p, int64_t bytes) const;

 private:
  MappedFile() = default;
  void unmap();

  const uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  std::string path_;
};

}  // namespace smezo
