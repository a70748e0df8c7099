"""The transformer's corpus: text generated from a seed (no download), read one character at a
time.

Three kinds of line, mixed at random:

* sentences of a small grammar ("the old fox sees a red hen."), whose subject and verb agree
  ("the foxes see"), so the next character depends on a word several positions back;
* sums of two numbers below 100 ("37+48=85."), whose answer is determined by the question;
* words spelled backwards ("rev lamp=pmal."), a copy over a distance that attention must make.

A character-level model learns the spelling and the grammar quickly and the sums and reversals
slowly, so its loss keeps falling for the whole run: gradients keep shrinking, as in the MLP
demo, and the precision policies have room to differ.
"""

from __future__ import annotations

import numpy as np

ALPHABET = "\n .=+abcdefghijklmnopqrstuvwxyz0123456789"  # token id = index

_ADJ = ("old", "red", "small", "quick", "lazy", "green", "tall", "quiet")
_NOUN = ("fox", "dog", "hen", "cat", "owl", "bee", "elk", "ant", "bird", "frog")
_VERB = (("sees", "see"), ("likes", "like"), ("finds", "find"), ("hears", "hear"), ("chases", "chase"))
_DET = ("the", "a", "one", "this")
_WORDS = ("lamp", "river", "stone", "garden", "window", "silver", "cloud", "paper", "table", "winter")


def _plural(noun: str) -> str:
    return noun + ("es" if noun.endswith("x") else "s")


def _sentence(r: np.ndarray) -> str:
    """A sentence from eight random integers."""
    plural = bool(r[0] % 2)
    subj = _NOUN[r[1] % len(_NOUN)]
    det = "the" if plural else _DET[r[2] % len(_DET)]
    adj = f"{_ADJ[r[3] % len(_ADJ)]} " if r[4] % 2 else ""
    verb = _VERB[r[5] % len(_VERB)][1 if plural else 0]
    obj = f"{_DET[r[6] % len(_DET)]} {_ADJ[r[7] % len(_ADJ)]} {_NOUN[r[6] // 7 % len(_NOUN)]}"
    return f"{det} {adj}{_plural(subj) if plural else subj} {verb} {obj}."


def _sum(r: np.ndarray) -> str:
    a, b = int(r[0] % 100), int(r[1] % 100)
    return f"{a}+{b}={a + b}."


def _reverse(r: np.ndarray) -> str:
    w = _WORDS[r[0] % len(_WORDS)]
    return f"rev {w}={w[::-1]}."


def generate_text(n_chars: int, seed: int) -> str:
    """About ``n_chars`` characters of the corpus (whole lines), from ``seed``.

    >>> generate_text(60, 0).splitlines()[:3]
    ['rev river=revir.', '0+21=21.', 'a ant chases one small dog.']
    """
    rng = np.random.default_rng([seed, 0xC0A5])
    kinds = (_sentence, _sum, _reverse)
    lines, total = [], 0
    while total < n_chars:  # lines are at least 8 characters long: one batch of draws suffices
        n = n_chars // 8 + 1
        which = rng.choice(3, size=n, p=(0.5, 0.3, 0.2))
        draws = rng.integers(0, 2**31, (n, 8))
        for k, r in zip(which, draws):
            lines.append(kinds[k](r))
            total += len(lines[-1]) + 1
            if total >= n_chars:
                break
    return "\n".join(lines) + "\n"


def encode_text(text: str) -> np.ndarray:
    """Token ids (uint8) of ``text``; every character must be in :data:`ALPHABET`.

    >>> encode_text("ab 1").tolist()
    [5, 6, 1, 32]
    """
    table = np.full(256, 255, np.uint8)
    table[np.frombuffer(ALPHABET.encode(), np.uint8)] = np.arange(len(ALPHABET), dtype=np.uint8)
    ids = table[np.frombuffer(text.encode("ascii"), np.uint8)]
    if np.any(ids == 255):
        raise ValueError("text has characters outside the corpus alphabet")
    return ids


def decode_ids(ids: np.ndarray) -> str:
    """The text of token ids.

    >>> decode_ids(encode_text("12+3=15."))
    '12+3=15.'
    """
    return "".join(ALPHABET[int(i)] for i in ids)


def make_corpus(seed: int = 0, n_train: int = 200_000, n_val: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """Training and validation token streams, drawn independently from ``seed``.

    >>> tr, va = make_corpus(0, 1000, 100)
    >>> len(tr) >= 1000 and len(va) >= 100 and int(tr.max()) < len(ALPHABET)
    True
    """
    return encode_text(generate_text(n_train, 2 * seed)), encode_text(generate_text(n_val, 2 * seed + 1))
