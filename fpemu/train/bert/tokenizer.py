"""BERT's uncased WordPiece tokenizer, from a ``vocab.txt`` (one token a line, its id the line
number), as the model's ``tokenizer.json`` describes it (``BertNormalizer`` with lower case,
``BertPreTokenizer``, ``WordPiece`` with ``##`` and at most 100 characters a word, the
``[CLS] ... [SEP]`` template):

* clean: NUL, U+FFFD and control characters (Cc, Cf, Co, Cs) dropped, every white space
  turned into a space;
* CJK ideographs set apart by spaces (each one a word);
* accents stripped (NFD, combining marks of category Mn dropped) and the text lower-cased;
* words split on white space, then every punctuation character (ASCII symbols, Unicode
  category P*) made a word of its own;
* a special token written out (``[SEP]``, ``[MASK]`` ...) kept as that token, first;
* each word split greedily into the longest pieces of the vocabulary, the pieces after the
  first written ``##piece``; a word with no such split, or of more than 100 characters, is
  ``[UNK]``.

The checks compare it with the ``tokenizers`` library on the model's own tokenizer.json
(tests/train/bert/test_tokenizer.py).

>>> tok = WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "cafe", ",", "!"])
>>> tok.tokens("Unaffable, CAFÉ!")
['un', '##aff', '##able', ',', 'cafe', '!']
>>> tok.encode("Unaffable, CAFÉ!")
[2, 4, 5, 6, 8, 7, 9, 3]
"""

from __future__ import annotations

import os
import re
import unicodedata
from typing import Sequence

import numpy as np

__all__ = ["WordPiece", "read_vocab", "basic_words"]

MAX_WORD_CHARS = 100  # tokenizer.json's max_input_chars_per_word
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")

# The CJK ideograph blocks BERT's tokenizer sets apart (the Unicode CJK Unified Ideographs and
# their extensions A to E, the compatibility ideographs and their supplement). Extension E
# starts at 0x2B920 here, not 0x2B820: the tokenizers library's BertNormalizer (the model's
# tokenizer.json, what sentence-transformers runs) has it so, where BERT's Python code has
# 0x2B820; U+2B820..U+2B91F are therefore letters of a word, as the model's tokenizer reads them.
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK)


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    # Tab, newline and carriage return are white space, not control characters; unassigned
    # code points (Cn) are kept, as the tokenizers library keeps them (they become [UNK]).
    return ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs")


def _is_punctuation(ch: str) -> bool:
    # Every non-alphanumeric ASCII character counts ("$", "^", "`" are not Unicode P*).
    cp = ord(ch)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or unicodedata.category(ch).startswith("P")


def _normalize(text: str) -> str:
    """Clean, CJK apart, accents stripped, lower case: the BertNormalizer of the model."""
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_whitespace(ch):
            out.append(" ")
        elif _is_cjk(cp):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    decomposed = unicodedata.normalize("NFD", "".join(out))
    # Lower case one character at a time, as the tokenizers library does: no final-sigma rule
    # (str.lower() writes a word-final capital sigma as ς, the model's tokenizer as σ).
    return "".join(ch.lower() for ch in decomposed if unicodedata.category(ch) != "Mn")


def basic_words(text: str) -> list[str]:
    """The words of ``text`` before WordPiece: normalized, split on white space and punctuation.

    >>> basic_words("Héllo,world!! 北京 don't")
    ['hello', ',', 'world', '!', '!', '北', '京', 'don', "'", 't']
    """
    words = []
    for chunk in _normalize(text).split():
        start = 0
        for i, ch in enumerate(chunk):
            if _is_punctuation(ch):
                if i > start:
                    words.append(chunk[start:i])
                words.append(ch)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


def read_vocab(path: str | os.PathLike) -> list[str]:
    """The tokens of a ``vocab.txt``, in id order (a line's trailing newline removed)."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").rstrip("\r") for line in f]


class WordPiece:
    """The tokenizer of a vocabulary (a list of tokens, id = index); it must hold the special
    tokens ``[PAD]``, ``[UNK]``, ``[CLS]`` and ``[SEP]``."""

    def __init__(self, vocab: Sequence[str]) -> None:
        self.vocab = list(vocab)
        self.ids = {t: i for i, t in enumerate(self.vocab)}
        missing = [t for t in SPECIALS if t not in self.ids]
        if missing:
            raise ValueError(f"the vocabulary lacks the special token {missing[0]}")
        self.pad, self.unk, self.cls, self.sep = (self.ids[t] for t in SPECIALS)
        self.longest = max(len(t) for t in self.vocab)
        specials = [t for t in (*SPECIALS, "[MASK]") if t in self.ids]
        self._specials = re.compile("(" + "|".join(map(re.escape, specials)) + ")")

    def _pieces(self, word: str) -> list[str]:
        if len(word) > MAX_WORD_CHARS:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            for end in range(min(len(word), start + self.longest + 2), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    pieces.append(piece)
                    start = end
                    break
            else:
                return ["[UNK]"]
        return pieces

    def tokens(self, text: str) -> list[str]:
        """The WordPiece tokens of ``text``; a special token written out in it (``[MASK]``,
        ``[SEP]`` ...) is that token, as the model's tokenizer matches its added tokens first.

        >>> WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]).tokens("a[MASK] a")
        ['a', '[MASK]', 'a']
        """
        out = []
        for i, part in enumerate(self._specials.split(text)):
            out.extend([part] if i % 2 else [p for w in basic_words(part) for p in self._pieces(w)])
        return out

    def encode(self, text: str, max_length: int = 256) -> list[int]:
        """``[CLS]``, the token ids of ``text`` cut to ``max_length - 2``, ``[SEP]``."""
        if max_length < 2:
            raise ValueError(f"max_length must leave room for [CLS] and [SEP], got {max_length}")
        ids = [self.ids[t] for t in self.tokens(text)][: max_length - 2]
        return [self.cls, *ids, self.sep]

    def batch(self, texts: Sequence[str], max_length: int = 256) -> tuple[np.ndarray, np.ndarray]:
        """Token ids (int64, padded with ``[PAD]`` to the longest) and the attention mask (1 on
        real tokens) of several texts.

        >>> ids, mask = WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"]).batch(["a a", "a"])
        >>> ids.tolist(), mask.tolist()
        ([[2, 4, 4, 3], [2, 4, 3, 0]], [[1, 1, 1, 1], [1, 1, 1, 0]])
        """
        rows = [self.encode(t, max_length) for t in texts]
        width = max((len(r) for r in rows), default=0)
        ids = np.full((len(rows), width), self.pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        return ids, mask
