// SQuAD v1.1 exact match and token F1 (src/tasks/text_metrics.h): values worked out by hand
// from the official script's definitions, and a randomised check of F1 against a multiset
// count written differently (sorted token lists merged).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/check.h"
#include "tasks/text_metrics.h"

using namespace smezo;

TEST(TextMetrics, NormalizesAsSquad) {
  EXPECT_EQ(squad_normalize("The Cat, sat on a mat!"), "cat sat on mat");
  EXPECT_EQ(squad_normalize("An apple and a banana"), "apple and banana");  // "an" inside a word stays
  EXPECT_EQ(squad_normalize("Theatre THE"), "theatre");
  EXPECT_EQ(squad_normalize("a.b the_end"), "ab theend");  // punctuation ('_' too) goes before articles
  EXPECT_EQ(squad_normalize("  x\t\n y  "), "x y");
  EXPECT_EQ(squad_normalize("the a an"), "");
  EXPECT_EQ(squad_normalize("caf\xc3\xa9 a \xc3\xa9t\xc3\xa9"), "caf\xc3\xa9 \xc3\xa9t\xc3\xa9");
}

TEST(TextMetrics, ExactMatchAndF1ByHand) {
  EXPECT_EQ(exact_match("The Eiffel Tower", "eiffel tower."), 1.0);
  EXPECT_EQ(exact_match("Eiffel Tower, Paris", "eiffel tower"), 0.0);
  // [cat sat] vs [cat sat down]: common 2, P 1, R 2/3, F1 0.8
  EXPECT_NEAR(token_f1("the cat sat", "cat sat down"), 0.8, 1e-15);
  // [cat cat cat] vs [cat dog]: common min(3,1) = 1, P 1/3, R 1/2, F1 0.4
  EXPECT_NEAR(token_f1("cat cat cat", "cat dog"), 0.4, 1e-15);
  EXPECT_EQ(token_f1("blue", "red"), 0.0);
  EXPECT_EQ(token_f1("Red!", "red"), 1.0);
  // v1.1: nothing in common scores 0, even two empty answers; their exact match is 1
  EXPECT_EQ(token_f1("", ""), 0.0);
  EXPECT_EQ(token_f1("the", "a"), 0.0);
  EXPECT_EQ(exact_match("the", ""), 1.0);
}

TEST(TextMetrics, BestOverReferences) {
  const std::vector<std::string> refs = {"London", "Paris, France"};
  EXPECT_EQ(max_exact_match("paris", refs), 0.0);
  EXPECT_NEAR(max_token_f1("paris", refs), 2.0 / 3.0, 1e-15);  // P 1, R 1/2 against the second
  EXPECT_EQ(max_exact_match("paris", {"London", "Paris, France", "paris."}), 1.0);
  EXPECT_EQ(max_token_f1("paris", {"London", "Paris, France", "paris."}), 1.0);
  EXPECT_THROW(max_token_f1("paris", {}), Error);
  EXPECT_THROW(max_exact_match("paris", {}), Error);
}

TEST(TextMetrics, F1MatchesAMultisetMergeOnRandomText) {
  std::mt19937 rng(std::random_device{}());
  const std::vector<std::string> words = {"x", "y", "zz", "w1", "Q"};  // no articles or punctuation
  for (int trial = 0; trial < 200; trial++) {
    std::vector<std::string> p, r;
    for (int n = 1 + rng() % 6; n > 0; n--) p.push_back(words[rng() % words.size()]);
    for (int n = 1 + rng() % 6; n > 0; n--) r.push_back(words[rng() % words.size()]);
    std::string ps, rs;
    for (const auto& w : p) ps += w + (rng() % 2 ? " " : "\t ");
    for (const auto& w : r) rs += " " + w;
    std::vector<std::string> pl, rl;  // lower-cased, sorted
    for (auto w : p) pl.push_back(w == "Q" ? "q" : w);
    for (auto w : r) rl.push_back(w == "Q" ? "q" : w);
    std::sort(pl.begin(), pl.end());
    std::sort(rl.begin(), rl.end());
    std::vector<std::string> both;
    std::set_intersection(pl.begin(), pl.end(), rl.begin(), rl.end(), std::back_inserter(both));
    const double c = static_cast<double>(both.size());
    const double expected = c == 0 ? 0.0 : 2.0 * c / static_cast<double>(pl.size() + rl.size());  // 2PR/(P+R)
    EXPECT_NEAR(token_f1(ps, rs), expected, 1e-12) << ps << " | " << rs;
    EXPECT_NEAR(token_f1(rs, ps), expected, 1e-12);  // symmetric
    EXPECT_EQ(exact_match(ps, rs), pl == rl && p.size() == r.size() &&
                                       std::equal(p.begin(), p.end(), r.begin(), [](auto& a, auto& b) {
                                         return (a == "Q" ? "q" : a) == (b == "Q" ? "q" : b);
                                       }) ? 1.0 : 0.0);
  }
}
