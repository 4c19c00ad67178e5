"""Language identification: the cached model answers as the package's own loader."""

from __future__ import annotations


def test_the_unpacked_cached_model_answers_as_py3langids_own_loader(tmp_path, monkeypatch) -> None:
    """The model is unpacked once into the cache (a parse worker's start read 0.9 s of LZMA)
    and read from there; its answers are the package loader's."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from courtier.content import language

    monkeypatch.setenv("COURTIER_CACHE", str(tmp_path))
    language._identifier.cache_clear()
    try:
        cached = language._identifier()
        assert next(p.name for p in tmp_path.iterdir()).startswith("py3langid-")
        own = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        for text in (
            "Der schnelle braune Fuchs springt über den faulen Hund.",
            "Le renard brun rapide saute par-dessus le chien paresseux.",
            "El rápido zorro marrón salta sobre el perro perezoso.",
        ):
            assert cached.classify(text) == own.classify(text)
    finally:
        language._identifier.cache_clear()
