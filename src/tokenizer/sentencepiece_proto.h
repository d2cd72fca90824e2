// What a sentencepiece .model says about itself, read from its protobuf (ModelProto) without
// libprotobuf: the pieces with their scores and types, the model type and the normalizer's rules.
// Used to write a tokenizer.json that transformers tokenizes exactly as sentencepiece does
// (tokenizer_files.h). Fields (sentencepiece_model.proto): ModelProto 1 pieces {1 piece, 2 score,
// 3 type}, 2 trainer_spec {3 model_type}, 3 normalizer_spec {1 name, 3 add_dummy_prefix,
// 4 remove_extra_whitespaces}; absent fields take the proto's defaults.
#pragma once

#include <string>
#include <vector>

namespace smezo {

enum SentencepiecePieceType {  // ModelProto.SentencePiece.Type
  SP_PIECE_NORMAL = 1,
  SP_PIECE_UNKNOWN = 2,
  SP_PIECE_CONTROL = 3,
  SP_PIECE_USER_DEFINED = 4,
  SP_PIECE_UNUSED = 5,
  SP_PIECE_BYTE = 6,
};

struct SentencepieceModelInfo {
  struct Piece {
    std::string piece;
    float score = 0.0f;
    int type = SP_PIECE_NORMAL;
  };
  std::vector<Piece> pieces;        // by id
  int model_type = 1;               // trainer_spec.model_type: 1 unigram, 2 BPE, 3 word, 4 char
  std::string normalizer = "nmt_nfkc";  // normalizer_spec.name
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
};

// Parses path; throws smezo::Error naming it when it is not a well-formed ModelProto.
SentencepieceModelInfo read_sentencepiece_model_info(const std::string& path);

}  // namespace smezo
