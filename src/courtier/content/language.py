"""The language of a page's main text: py3langid's bundled model, offline, in the worker.

py3langid (a maintained fork of langid.py: 141 languages and ``zxx``, "no linguistic
content", a naive Bayes model over byte n-grams, shipped inside the package) was chosen over
lingua (right as often on the simulated web's articles, but 560-780 us a page against 106, 7 s
to load and 1.3 GB with its models preloaded) and fasttext-predict (fast, but its model is a
separate download). Its time grows with the text, so only the first
``LANGUAGE_CHARS`` characters are read (320: about 50 words; 512 cost 50% more for no better
answer on the simulated web's articles): a paragraph names a language as surely as a page
does. The model loads once a worker (about a second, in the pool's warm-up).
"""

from __future__ import annotations

from functools import cache
from typing import Final

from py3langid.langid import MODEL_FILE, LanguageIdentifier

LANGUAGE_CHARS: Final = 320
MIN_LETTERS: Final = 20
"""Texts with fewer letters than this name no language (a title, a menu)."""
NO_LANGUAGE: Final = "zxx"
MIN_SCORE: Final = 0.5
"""The identifier's normalised probability below which it is unsure: no language."""


@cache
def _identifier() -> LanguageIdentifier:
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def load_model() -> None:
    """Load the model now (a parse worker's warm-up, before its memory budget applies)."""
    _identifier()


def identify(text: str) -> tuple[str | None, float]:
    """(code, probability) of ``text``: ISO 639-1 where the language has one (``de``), else
    ISO 639-3 (``yue``); (None, p) when too short, unsure, or no language (``zxx``)."""
    sample = text[:LANGUAGE_CHARS]
    if sum(map(str.isalpha, sample)) < MIN_LETTERS:
        return None, 0.0
    language, score = _identifier().classify(sample)
    score = round(float(score), 3)
    if score < MIN_SCORE or language == NO_LANGUAGE:
        return None, score
    return str(language), score
