"""The language of a page's main text: py3langid's bundled model, offline, in the worker.

py3langid (a maintained fork of langid.py: 141 languages and ``zxx``, "no linguistic
content", a naive Bayes model over byte n-grams, shipped inside the package) was chosen over
lingua (right as often on the simulated web's articles, but 560-780 us a page against 106, 7 s
to load and 1.3 GB with its models preloaded) and fasttext-predict (fast, but its model is a
separate download). Its time grows with the text, so only the first
``LANGUAGE_CHARS`` characters are read (320: about 50 words; 512 cost 50% more for no better
answer on the simulated web's articles): a paragraph names a language as surely as a page
does. The model loads once a worker, in the pool's warm-up. py3langid ships it LZMA-packed,
and unpacking took 0.9 s of CPU at every parse worker's start (tests and short crawls start
many); so it is unpacked once into the user's cache directory (``COURTIER_CACHE``, else
``$XDG_CACHE_HOME/courtier``, else ``~/.cache/courtier``: 68 MB) and read from there
(0.2 s). Without a writable cache, or with a model whose layout this reading does not know,
py3langid's own loader is used.
"""

from __future__ import annotations

import contextlib
import lzma
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any, Final

import numpy as np
from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

LANGUAGE_CHARS: Final = 320
MIN_LETTERS: Final = 20
"""Texts with fewer letters than this name no language (a title, a menu)."""
NO_LANGUAGE: Final = "zxx"
MIN_SCORE: Final = 0.5
"""The identifier's normalised probability below which it is unsure: no language."""


@cache
def _identifier() -> LanguageIdentifier:
    try:
        ptc, pc, classes, nextmove, row, output = _unpacked_model()
    except (OSError, ValueError, KeyError, ImportError, AttributeError):
        return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return LanguageIdentifier(
        np.asarray(ptc), np.asarray(pc), classes, nextmove, output, norm_probs=True, tk_row=row
    )


def _cache_dir() -> Path:
    own = os.environ.get("COURTIER_CACHE")
    if own:
        return Path(own)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "courtier"


def _unpacked_model() -> tuple[Any, ...]:
    """The model's arrays, read from its unpacked copy (made now if missing), laid out as
    py3langid's own loader gives them."""
    from py3langid.modelio import _to_array

    packed = Path(MODEL_DIR) / MODEL_FILE
    stat = packed.stat()
    unpacked = _cache_dir() / f"py3langid-{stat.st_size}-{int(stat.st_mtime)}.npz"
    if not unpacked.exists():
        unpacked.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=unpacked.parent, delete=False) as copy:
            try:
                with lzma.open(packed) as source:
                    shutil.copyfileobj(source, copy, 1 << 20)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(copy.name)
                raise
        os.replace(copy.name, unpacked)  # whole or not at all, whoever unpacks it too
    with np.load(unpacked, allow_pickle=False) as data:
        return (
            data["ptc"],
            data["pc"],
            data["classes"].tolist(),
            _to_array(data["nextmove"]),
            _to_array(data["nextmove_row"]),
            data["out_feat"].tolist(),
        )


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
