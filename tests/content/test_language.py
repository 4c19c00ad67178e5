"""Language identification: the cached model answers as the package's own loader."""

from __future__ import annotations

import pytest


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


def test_an_unsure_identification_names_no_language() -> None:
    """Texts of many languages, or of none (a list of capitals), get a best guess the model
    gives well under even odds: no language is named, the score is kept."""
    from courtier.content import language

    for text in (
        "Hallo and bonjour, ciao amigo, danke merci grazie gracias thank you very much obrigado",
        "Berlin Paris Madrid Roma London Lisboa Amsterdam Wien Praha Warszawa",
    ):
        guess, score = language._identifier().classify(text)
        assert guess != language.NO_LANGUAGE and score < language.MIN_SCORE  # the premise
        assert language.identify(text) == (None, round(float(score), 3))
    sure = "Der schnelle braune Fuchs springt über den faulen Hund und läuft in den Wald."
    assert language.identify(sure)[0] == "de"


class _Identifier:
    def __init__(self, answer: tuple[str, float]) -> None:
        self.answer = answer

    def classify(self, text: str) -> tuple[str, float]:
        return self.answer


def test_a_language_is_named_from_even_odds_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from courtier.content import language

    text = "Ein Satz mit genug Buchstaben, um beurteilt zu werden."
    for answer, named in (
        (("de", 0.5), ("de", 0.5)),
        (("de", 0.4996), ("de", 0.5)),  # the score is read to three places
        (("de", 0.4994), (None, 0.499)),
        (("de", 0.0), (None, 0.0)),
        (("zxx", 0.99), (None, 0.99)),
    ):
        monkeypatch.setattr(language, "_identifier", lambda answer=answer: _Identifier(answer))
        assert language.identify(text) == named, answer
