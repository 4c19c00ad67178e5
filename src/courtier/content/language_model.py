"""py3langid's bundled model, loaded once a worker, offline.

py3langid ships it LZMA-packed, and unpacking took 0.9 s of CPU at every parse worker's start
(tests and short crawls start many); so it is unpacked once into the user's cache directory
(``COURTIER_CACHE``, else ``$XDG_CACHE_HOME/courtier``, else ``~/.cache/courtier``: 68 MB)
and read from there (0.2 s). Without a writable cache, or with a model whose layout this
reading does not know, py3langid's own loader is used.
"""

from __future__ import annotations

import contextlib
import lzma
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier


@cache
def identifier() -> LanguageIdentifier:
    """The worker's one identifier (normalised probabilities)."""
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
    identifier()
