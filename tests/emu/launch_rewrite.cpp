// The emulated CUDA target's source rewrite: a .cu file in, the same file as host C++ out,
// line for line (a `#line` directive first, so errors and __FILE__ name the real .cu file).
// Two rewrites, in code only (comments and literals are copied untouched):
//   kernel<<<grid, block, smem, stream>>>(args)
//     -> ::emu::make_launch(kernel, "kernel", __FILE__, __LINE__,
//                           ::emu::LaunchConfig(grid, block, smem, stream))(args)
//   extern __shared__ [__align__(N)] TYPE NAME[];
//     -> TYPE* const NAME = static_cast<TYPE*>(::emu::dynamic_shared_memory());
//        (block scope, where CUDA code declares it)
//   __shared__ ... NAME[...];   (static shared memory: thread_local storage, see emu_device.h)
//     -> the same, followed on the same line by a registration that fills NAME with 0xff
//        bytes at the start of every block, as uninitialised shared memory, so a read before
//        any write (or a stale value from an earlier block) shows up
// Inline PTX (asm / __asm__ in device code) has no emulated twin in tests/emu: the rewrite
// refuses it, naming the file, the line and the instruction, rather than letting g++ hand PTX
// to the host assembler.
// Usage: launch_rewrite IN.cu OUT.cpp
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>

namespace {

[[noreturn]] void die(const std::string& file, const std::string& src, size_t pos, const std::string& msg) {
  const size_t line = 1 + static_cast<size_t>(std::count(src.begin(), src.begin() + pos, '\n'));
  std::cerr << file << ":" << line << ": emu launch_rewrite: " << msg << "\n";
  std::exit(1);
}

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Length of a comment, string or character literal starting at i (0 if none).
size_t skip_literal(const std::string& s, size_t i) {
  if (s.compare(i, 2, "//") == 0) return s.find('\n', i) == std::string::npos ? s.size() - i : s.find('\n', i) - i;
  if (s.compare(i, 2, "/*") == 0) {
    const size_t e = s.find("*/", i + 2);
    return e == std::string::npos ? s.size() - i : e + 2 - i;
  }
  if (s[i] == '"' || s[i] == '\'') {
    if (s[i] == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(s[i - 1]))) return 0;  // 1'000
    size_t j = i + 1;
    while (j < s.size() && s[j] != s[i]) j += s[j] == '\\' ? 2 : 1;
    return j + 1 - i;
  }
  return 0;
}

// Start of the kernel expression that ends just before `end` (an identifier, qualified,
// optionally with template arguments).
size_t kernel_start(const std::string& out, size_t end) {
  size_t i = end;
  while (i > 0 && std::isspace(static_cast<unsigned char>(out[i - 1]))) --i;
  if (i > 0 && out[i - 1] == '>') {
    int depth = 0;
    do {
      --i;
      if (out[i] == '>') ++depth;
      else if (out[i] == '<') --depth;
    } while (i > 0 && depth > 0);
  }
  while (i > 0 && (std::isalnum(static_cast<unsigned char>(out[i - 1])) || out[i - 1] == '_' || out[i - 1] == ':')) --i;
  return i;
}

// The launch at src[i] (`<<<`) and the kernel before it in out (after its first `body` bytes) as
// ::emu::make_launch(kernel, "name", __FILE__, __LINE__, LaunchConfig(...)); returns the index after `>>>`.
size_t rewrite_launch(const char* file, const std::string& src, size_t i, size_t body, std::string* out) {
  const size_t start = kernel_start(*out, out->size());
  if (start < body || start == out->size()) die(file, src, i, "no kernel name before <<<");
  const std::string kernel = out->substr(start, out->size() - start);
  // The launch configuration: up to the matching >>> outside any brackets.
  size_t j = i + 3;
  int depth = 0;
  while (j < src.size() && !(depth == 0 && src.compare(j, 3, ">>>") == 0)) {
    if (const size_t n = skip_literal(src, j)) {
      j += n;
      continue;
    }
    const char c = src[j];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    ++j;
  }
  if (j >= src.size()) die(file, src, i, "<<< without a matching >>>");
  std::string name = kernel;
  for (char& c : name)
    if (c == '\n' || c == '"' || c == '\\') c = ' ';
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
  out->resize(start);
  *out += "::emu::make_launch(" + kernel + ", \"" + name + "\", __FILE__, __LINE__, ::emu::LaunchConfig(";
  out->append(src, i + 3, j - (i + 3));
  *out += "))";
  return j + 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: launch_rewrite IN.cu OUT.cpp\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "launch_rewrite: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string src = buf.str();
  const std::regex dyn_shared(
      R"(extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_][\w:<> ]*?)\s+(\w+)\s*\[\s*\]\s*;)");
  const std::regex static_shared(
      R"(__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?[A-Za-z_][\w:<> ]*?\s+(\w+)\s*(?:\[[^\];]*\]\s*)*;)");
  std::string out = "#line 1 \"" + std::string(argv[1]) + "\"\n";
  const size_t body = out.size();
  for (size_t i = 0; i < src.size();) {
    if (const size_t n = skip_literal(src, i)) {
      out.append(src, i, n);
      i += n;
      continue;
    }
    for (const char* kw : {"asm", "__asm__"}) {
      const size_t len = std::strlen(kw);
      if (src.compare(i, len, kw) == 0 && (i == 0 || !is_ident(src[i - 1])) &&
          i + len < src.size() && !is_ident(src[i + len])) {
        const size_t q = src.find('"', i);
        std::string insn = q == std::string::npos ? "?" : src.substr(q + 1, src.find_first_of(" \t;\"\\", q + 1) - q - 1);
        die(argv[1], src, i,
            "inline PTX `" + insn + "` is not emulated: add an emulated twin of each instruction to "
            "tests/emu (see its README), or keep the kernel out of the emulated build");
      }
    }
    if (src.compare(i, 3, "<<<") == 0) {
      i = rewrite_launch(argv[1], src, i, body, &out);
      continue;
    }
    if (src.compare(i, 6, "extern") == 0 && (i == 0 || !std::isalnum(static_cast<unsigned char>(src[i - 1])))) {
      std::smatch m;
      const std::string rest = src.substr(i, 512);
      if (std::regex_search(rest, m, dyn_shared, std::regex_constants::match_continuous)) {
        const std::string type = m[1].str(), name = m[2].str();
        std::string decl = type + "* const " + name + " = static_cast<" + type + "*>(::emu::dynamic_shared_memory());";
        for (char c : m[0].str())
          if (c == '\n') decl += '\n';  // keep the line count
        out += decl;
        i += m[0].length();
        continue;
      }
    }
    if (src.compare(i, 10, "__shared__") == 0 && (i == 0 || !std::isalnum(static_cast<unsigned char>(src[i - 1])))) {
      std::smatch m;
      const std::string rest = src.substr(i, 512);
      if (std::regex_search(rest, m, static_shared, std::regex_constants::match_continuous)) {
        const std::string name = m[1].str();
        out += m[0].str() + " thread_local ::emu::SharedPoison emu_poison_" + name + "(&" + name +
               ", sizeof " + name + ");";
        i += m[0].length();
        continue;
      }
    }
    out += src[i++];
  }
  std::ofstream o(argv[2], std::ios::binary);
  o << out;
  if (!o) {
    std::cerr << "launch_rewrite: cannot write " << argv[2] << "\n";
    return 1;
  }
  return 0;
}
