// The byte-level BPE tokenizer (see bpe_tokenizer.h).
#include "tokenizer/bpe_tokenizer.h"


#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "common/file_util.h"
#include "tokenizer/bpe_bytes.h"
#include "tokenizer/bpe_nfc.h"

namespace smezo {

BpeTokenizer::BpeTokenizer(BpeVocab vocab) : vocab_(std::move(vocab)) {
  bpe_vocab_validate(vocab_);
  const int32_t n = static_cast<int32_t>(vocab_.tokens.size());
  std::unordered_map<std::string, int32_t> id_of;
  id_of.reserve(vocab_.tokens.size());
  token_bytes_.resize(n);
  for (int32_t i = 0; i < n; i++) {
    id_of.emplace(vocab_.tokens[i], i);
    token_bytes_[i] = bpe_token_bytes(vocab_.tokens[i]);
    const int32_t type = vocab_.types[i];
    if (type == BPE_TOKEN_CONTROL || type == BPE_TOKEN_USER_DEFINED) {
      if (vocab_.tokens[i].empty()) continue;  // an empty added token can never match
      added_by_first_byte_[static_cast<uint8_t>(vocab_.tokens[i][0])].push_back(AddedToken{vocab_.tokens[i], i});
      has_added_ = true;
    } else if (vocab_.ignore_merges) {
      word_ids_.emplace(token_bytes_[i], i);
    }
  }
  for (auto& list : added_by_first_byte_)
    std::stable_sort(list.begin(), list.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.text.size() > b.text.size(); });

  for (int b = 0; b < 256; b++) {
    auto it = id_of.find(bpe_bytes_to_spelling(std::string(1, static_cast<char>(b))));
    merger_.set_byte_id(static_cast<uint8_t>(b), it != id_of.end() ? it->second : vocab_.missing_byte_id);
  }
  for (size_t r = 0; r < vocab_.merges.size(); r++) {
    const auto& m = vocab_.merges[r];
    merger_.add_merge(id_of.at(m.first), id_of.at(m.second), id_of.at(m.first + m.second), static_cast<int32_t>(r));
  }
  try {
    pre_ = std::make_unique<BpePreTokenizer>(vocab_.pre_patterns);
  } catch (const Error& e) {
    throw_error("%s: %s", vocab_.source.c_str(), e.what());
  }
}

void BpeTokenizer::encode_word(const char* bytes, size_t n, std::vector<int32_t>* out) const {
  if (vocab_.ignore_merges) {
    auto it = word_ids_.find(std::string(bytes, n));
    if (it != word_ids_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  if (n > kCacheMaxWordBytes) {
    merger_.merge_word(bytes, n, out);
    return;
  }
  std::string key(bytes, n);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  merger_.merge_word(bytes, n, &ids);
  out->insert(out->end(), ids.begin(), ids.end());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() >= kCacheMaxWords) cache_.clear();
  cache_.emplace(std::move(key), std::move(ids));
}

void BpeTokenizer::encode_plain(const std::string& text, size_t begin, size_t end, std::vector<int32_t>* out) const {
  if (begin == end) return;
  std::vector<std::pair<size_t, size_t>> words;
  pre_->split(text, begin, end, &words);
  for (const auto& w : words) encode_word(text.data() + w.first, w.second - w.first, out);
}

std::vector<int32_t> BpeTokenizer::encode(const std::string& raw_text, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos) {
    SMEZO_REQUIRE(vocab_.bos_id >= 0, "%s: the tokenizer has no BOS token to prepend", vocab_.source.c_str());
    out.push_back(vocab_.bos_id);
  }
  const std::string text = vocab_.nfc ? nfc_normalize(utf8_sanitize(raw_text)) : utf8_sanitize(raw_text);
  out.reserve(out.size() + text.size() / 3);
  size_t plain_start = 0;
  if (has_added_) {
    for (size_t i = 0; i < text.size();) {
      const AddedToken* hit = nullptr;
      for (const AddedToken& a : added_by_first_byte_[static_cast<uint8_t>(text[i])]) {
        if (a.text.size() <= text.size() - i && std::memcmp(text.data() + i, a.text.data(), a.text.size()) == 0) {
          hit = &a;  // the lists are longest first
          break;
        }
      }
      if (hit == nullptr) {
        i++;
        continue;
      }
      encode_plain(text, plain_start, i, &out);
      out.push_back(hit->id);
      i += hit->text.size();
      plain_start = i;
    }
  }
  encode_plain(text, plain_start, text.size(), &out);
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& tokens) const {
  std::string bytes;
  for (int32_t t : tokens) {
    SMEZO_REQUIRE(t >= 0 && t < vocab_size(), "token id %d outside the tokenizer's %lld", t, (long long)vocab_size());
    if (vocab_.types[t] != BPE_TOKEN_CONTROL) bytes += token_bytes_[t];
  }
  return utf8_sanitize(bytes);
}

std::string BpeTokenizer::decode_piece(int32_t /*prev*/, int32_t token) const {
  SMEZO_REQUIRE(token >= 0 && token < vocab_size(), "token id %d outside the tokenizer's %lld", token,
                (long long)vocab_size());
  return vocab_.types[token] == BPE_TOKEN_CONTROL ? std::string() : token_bytes_[token];
}

std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(const std::string& path) {
  return std::make_unique<BpeTokenizer>(bpe_vocab_from_tokenizer_json(path));
}

std::unique_ptr<Tokenizer> load_bpe_tokenizer_hf_dir(const std::string& dir) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  if (path_exists(base + "tokenizer.json")) return load_bpe_tokenizer_json(base + "tokenizer.json");
  SMEZO_REQUIRE(path_exists(base + "vocab.json") && path_exists(base + "merges.txt"),
                "%s has no byte-level BPE tokenizer: neither tokenizer.json nor vocab.json + merges.txt", dir.c_str());
  return std::make_unique<BpeTokenizer>(bpe_vocab_from_gpt2_files(dir));
}

}  // namespace smezo
