"""Language identification: the cached model, and naming short and non-Latin texts by script."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtier.content import language, language_model


def test_the_unpacked_cached_model_answers_as_py3langids_own_loader(tmp_path, monkeypatch) -> None:
    """The model is unpacked once into the cache (a parse worker's start read 0.9 s of LZMA)
    and read from there; its answers are the package loader's."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    monkeypatch.setenv("COURTIER_CACHE", str(tmp_path))
    language_model.identifier.cache_clear()
    try:
        cached = language_model.identifier()
        assert next(p.name for p in tmp_path.iterdir()).startswith("py3langid-")
        own = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        for text in (
            "Der schnelle braune Fuchs springt über den faulen Hund.",
            "Le renard brun rapide saute par-dessus le chien paresseux.",
            "El rápido zorro marrón salta sobre el perro perezoso.",
        ):
            assert cached.classify(text) == own.classify(text)
    finally:
        language_model.identifier.cache_clear()


def test_an_unsure_identification_names_no_language() -> None:
    """Texts of many languages, or of none (a list of capitals), get a best guess the model
    gives well under even odds: no language is named, the score is kept."""
    for text in (
        "Hallo and bonjour, ciao amigo, danke merci grazie gracias thank you very much obrigado",
        "Berlin Paris Madrid Roma London Lisboa Amsterdam Wien Praha Warszawa",
    ):
        guess, score = language_model.identifier().classify(text)
        assert guess != language.NO_LANGUAGE and score < language.MIN_SCORE  # the premise
        assert language.identify(text) == (None, round(float(score), 3))
    sure = "Der schnelle braune Fuchs springt über den faulen Hund und läuft in den Wald."
    assert language.identify(sure)[0] == "de"


class _Identifier:
    """A model of one class, read through py3langid's public ``rank``."""

    def __init__(self, answer: tuple[str, float]) -> None:
        self.answer = answer
        self.nb_classes = [answer[0]]

    def rank(self, text: str) -> list[tuple[str, float]]:
        return [self.answer]


def test_a_language_is_named_from_even_odds_on(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "Ein Satz mit genug Buchstaben, um beurteilt zu werden."
    for answer, named in (
        (("de", 0.5), ("de", 0.5)),
        (("de", 0.4996), ("de", 0.5)),  # the score is read to three places
        (("de", 0.4994), (None, 0.499)),
        (("de", 0.0), (None, 0.0)),
        (("zxx", 0.99), (None, 0.99)),
    ):
        monkeypatch.setattr(language, "identifier", lambda answer=answer: _Identifier(answer))
        assert language.identify(text) == named, answer


# Script-aware identification (language.identify): short and non-Latin texts.


def test_the_two_short_titles_that_got_no_language() -> None:
    """A two-word Russian title (the model alone: Serbian 0.33, Russian 0.18) and a
    five-character Japanese one (fewer than MIN_LETTERS) now name their language."""
    from courtier.content.language import identify

    assert identify("Новости недвижимости")[0] == "ru"
    assert identify("日本の物件") == ("ja", 1.0)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("新築マンション", "ja"),
        ("お問い合わせ", "ja"),
        ("東京都港区の新築マンション、駅から徒歩5分、3LDK、8500万円。", "ja"),
        ("아파트 매매", "ko"),
        ("서울 강남구 아파트 매매, 84㎡, 방 3개, 12억 원.", "ko"),
        ("二手房出售", "zh"),
        ("聯絡我們", "zh"),  # the model alone: Cantonese
        ("北京租房", "zh"),  # the model alone: Wu
        ("บ้านขาย", "th"),
        ("ค้นหาอสังหาริมทรัพย์", "th"),
        ("Σπίτια προς πώληση", "el"),
        ("Επικοινωνία", "el"),
        ("דירות למכירה", "he"),
        ("צור קשר", "he"),
        ("ქალაქის ახალი ამბები", "ka"),
        ("Բնակարաններ վաճառք", "hy"),
        ("சென்னை செய்திகள்", "ta"),
    ],
)
def test_a_script_one_language_writes_names_it(text: str, code: str) -> None:
    from courtier.content.language import identify

    assert identify(text)[0] == code


def test_a_script_one_language_writes_needs_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Their letters decide: the model is not asked (nor its time spent), and the probability
    is the share of the letters in the script."""

    def no_model() -> None:
        raise AssertionError("the model was asked")

    monkeypatch.setattr(language, "identifier", no_model)
    assert language.identify("3LDK 駐車場あり") == ("ja", round(5 / 8, 3))
    assert language.identify("Νέα") == ("el", 1.0)
    assert language.identify("중고차 판매 BMW") == ("ko", round(5 / 8, 3))


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Новые объявления", "ru"),  # ы: no Ukrainian, Bulgarian or Serbian
        ("Квартиры в Москве", "ru"),
        ("Нові оголошення", "uk"),  # і: not Russian
        ("Зв'яжіться з нами", "uk"),
        ("Најновије вести", "sr"),  # ј: Serbian or Macedonian
        ("Свържете се с нас", "bg"),  # the model is sure (0.98)
        ("Қазақстан жаңалықтары", "kk"),
        ("شقق للبيع", "ar"),
        ("آخر الأخبار", "ar"),
        ("خانه برای اجاره", "fa"),  # ی: not Arabic
        ("جستجوی ملک", "fa"),  # the model alone: Southern Uzbek 0.38
        ("ہمارے بارے میں اردو خبریں", "ur"),
        ("मकान बिक्री के लिए", "hi"),
        ("संपत्ति खोजें", "hi"),  # the model alone: Sanskrit 0.31, Hindi 0.24
        ("मराठी बातम्या आणि घडामोडी", "mr"),  # the model is sure (0.93)
    ],
)
def test_a_shared_script_narrows_the_choice(text: str, code: str) -> None:
    from courtier.content.language import identify

    assert identify(text)[0] == code


def test_a_letter_rules_the_scripts_default_out() -> None:
    """A Cyrillic title the model is unsure of is Russian, unless a letter Russian does not
    write says otherwise; an Arabic-script one Arabic, unless a Persian letter does."""
    assert language.identify("Продажа домов")[0] == "ru"  # Serbian 0.24, Russian 0.14
    assert language.identify("Продажа домов ї")[0] == "uk"
    assert language.identify("Продажа домов ј")[0] == "sr"
    cyrillic = dict(language.SCRIPT_DEFAULTS["CYRILLIC"])
    assert set("їєґ") <= set(cyrillic["ru"]) and "ы" in cyrillic["uk"]
    assert "ы" not in cyrillic["ru"] and "ј" not in cyrillic["sr"]
    arabic = dict(language.SCRIPT_DEFAULTS["ARABIC"])
    assert "ی" in arabic["ar"] and "ی" not in arabic["fa"]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Apartment for sale", "en"),  # the model alone: Nigerian Pidgin 0.56, English 0.27
        ("New listings today", "en"),
        ("Wohnung kaufen", "de"),
        ("Aktuelle Nachrichten", "de"),
        ("Kontakt und Anfahrt", "de"),
        ("Maison à vendre", "fr"),
        ("Appartements à louer", "fr"),
        ("Dernières actualités", "fr"),
    ],
)
def test_short_latin_titles_the_model_is_sure_of(text: str, code: str) -> None:
    from courtier.content.language import identify

    assert identify(text)[0] == code


@pytest.mark.parametrize(
    "text",
    [
        "Home | About | Login",
        "Home",
        "Menu",
        "OK 42",
        "© 2024",
        "1 2 3 4 5 ... 10",
        "FAQ | RSS | API",
        "EUR 1.200,00",
        "Berlin Paris Madrid Roma London",
        "Apple 新品 iPhone",  # mostly Latin letters, not all: the model says Cantonese
        "★★★★☆ 4.5/5",
        "",
    ],
)
def test_menus_and_junk_name_no_language(text: str) -> None:
    """A menu's labels are words of some language ("Home | About | Login" is English), but
    one-word labels say little (the model's best guess is under 0.1) and a menu is not the
    page's text: no language rather than a guess, as before; names and numbers, none."""
    from courtier.content.language import identify

    assert identify(text)[0] is None


def test_the_public_rank_answers_as_the_private_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where py3langid has no ``_decide`` its public ``rank`` is read: the same answers."""
    real = language_model.identifier()

    class Public:
        nb_classes = real.nb_classes

        def rank(self, text: str) -> list[tuple[str, float]]:
            return list(real.rank(text))

    texts = [
        "Новости недвижимости",
        "Apartment for sale",
        "Продажба на апартаменти в София",
        "خدمات ما",
        "संपत्ति खोजें",
        "Der schnelle braune Fuchs springt über den faulen Hund und läuft in den Wald.",
    ]
    answers = [language.identify(text) for text in texts]
    public = Public()
    monkeypatch.setattr(language, "identifier", lambda: public)
    assert [language.identify(text) for text in texts] == answers


def _known() -> frozenset[str]:
    return frozenset(language_model.identifier().nb_classes) - {language.NO_LANGUAGE}


@given(st.text(st.characters(exclude_categories=()), max_size=400))
@settings(max_examples=300, deadline=None)
def test_any_text_gets_a_known_language_or_none(text: str) -> None:
    """Any text, lone surrogates and unassigned code points included: no exception; None
    (the module's "no language", never ``zxx``) or one of the model's languages, with a
    probability; and only the first LANGUAGE_CHARS characters count."""
    code, score = language.identify(text)
    assert code is None or code in _known()
    assert 0.0 <= score <= 1.0
    assert (
        language.identify(text + "Der schnelle braune Fuchs" * 20)[0] == code
        or len(text) < language.LANGUAGE_CHARS
    )


@given(
    st.lists(
        st.sampled_from(["αβγ", "Νέα", "λόγος", "1", " ", ", ", "€", "Ω"]), min_size=1, max_size=40
    )
)
@settings(max_examples=100, deadline=None)
def test_greek_letters_name_greek(parts: list[str]) -> None:
    from courtier.content.language import SCRIPT_MIN_LETTERS, identify

    text = "".join(parts)
    letters = sum(map(str.isalpha, text))
    assert identify(text)[0] == ("el" if letters >= SCRIPT_MIN_LETTERS else None)


@given(st.text(st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3), min_size=2))
@settings(max_examples=100, deadline=None)
def test_hangul_syllables_name_korean(text: str) -> None:
    from courtier.content.language import identify

    assert identify(text) == ("ko", 1.0)


@given(st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz .,|0123456789"), max_size=40))
@settings(max_examples=200, deadline=None)
def test_a_latin_text_under_six_letters_names_no_language(text: str) -> None:
    from courtier.content.language import LATIN_MIN_LETTERS, identify

    if sum(map(str.isalpha, text)) < LATIN_MIN_LETTERS:
        assert identify(text) == (None, 0.0)
