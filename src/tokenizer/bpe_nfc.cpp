// Unicode NFC (see bpe_nfc.h): decompose, order the marks, compose; UAX #15's algorithm as written.
#include "tokenizer/bpe_nfc.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "tokenizer/bpe_bytes.h"  // utf8_append
#include "tokenizer/nfc_tables.h"

namespace smezo {

namespace {

constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// The row of a table sorted by its first column whose [first, last] (or first) holds cp, or nullptr.
template <typename Row, size_t N>
const Row* row_of(const Row (&table)[N], uint32_t cp, bool ranged) {
  const Row* it = std::upper_bound(std::begin(table), std::end(table), cp, [](uint32_t v, const Row& r) { return v < r[0]; });
  if (it == std::begin(table)) return nullptr;
  const Row* r = it - 1;
  return cp <= (ranged ? (*r)[1] : (*r)[0]) ? r : nullptr;
}

uint32_t combining_class(uint32_t cp) {
  const auto* r = row_of(kNfcCombiningClasses, cp, true);
  return r ? (*r)[2] : 0;
}

void decompose(uint32_t cp, std::vector<uint32_t>* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {  // Hangul syllable: L V (T)
    const uint32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out->push_back(kTBase + s % kTCount);
    return;
  }
  const auto* d = row_of(kNfcDecompositions, cp, false);
  if (!d) {
    out->push_back(cp);
    return;
  }
  decompose((*d)[1], out);
  if ((*d)[2]) decompose((*d)[2], out);
}

// The primary composite of (a, b), or 0.
uint32_t compose_pair(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  for (const auto& d : kNfcDecompositions)  // rare: only texts that hold unsafe code points get here
    if (d[3] && d[1] == a && d[2] == b) return d[0];
  return 0;
}

// Canonical ordering: each run of non-starters sorted (stably) by combining class.
void order_marks(std::vector<uint32_t>* cps) {
  for (size_t i = 0; i < cps->size();) {
    if (combining_class((*cps)[i]) == 0) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < cps->size() && combining_class((*cps)[j]) != 0) j++;
    std::stable_sort(cps->begin() + i, cps->begin() + j,
                     [](uint32_t a, uint32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
}

// Canonical composition: each character joins the last starter unless a mark between blocks it.
void compose(std::vector<uint32_t>* cps) {
  std::vector<uint32_t>& c = *cps;
  size_t starter = 0, out = 0;
  bool have_starter = false;
  uint32_t last_class = 0;
  for (size_t i = 0; i < c.size(); i++) {
    const uint32_t cc = combining_class(c[i]);
    const bool blocked = out > starter + 1 && (last_class == 0 || last_class >= cc);
    const uint32_t joined = have_starter && !blocked ? compose_pair(c[starter], c[i]) : 0;
    if (joined) {
      c[starter] = joined;
      continue;
    }
    if (cc == 0) {
      starter = out;
      have_starter = true;
    }
    last_class = cc;
    c[out++] = c[i];
  }
  c.resize(out);
}

// The code point at text[i] (valid UTF-8) and its length in *n.
uint32_t code_point_at(const std::string& text, size_t i, size_t* n) {
  const unsigned char b = static_cast<unsigned char>(text[i]);
  *n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
  if (*n == 1 || i + *n > text.size()) {
    *n = 1;
    return b;
  }
  uint32_t v = *n == 2 ? b & 0x1F : *n == 3 ? b & 0x0F : b & 0x07;
  for (size_t k = 1; k < *n; k++) v = (v << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  return v;
}

}  // namespace

int64_t nfc_first_unsafe(const std::string& text, uint32_t* cp) {
  for (size_t i = 0, n = 1; i < text.size(); i += n) {
    const uint32_t v = code_point_at(text, i, &n);
    if (v >= 0x80 && row_of(kNfcUnsafeRanges, v, true)) {
      *cp = v;
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

std::string nfc_normalize(const std::string& text) {
  uint32_t first = 0;
  if (nfc_first_unsafe(text, &first) < 0) return text;
  std::vector<uint32_t> cps;
  for (size_t i = 0, n = 1; i < text.size(); i += n) decompose(code_point_at(text, i, &n), &cps);
  order_marks(&cps);
  compose(&cps);
  std::string out;
  out.reserve(text.size());
  for (uint32_t cp : cps) utf8_append(cp, &out);
  return out;
}

}  // namespace smezo
