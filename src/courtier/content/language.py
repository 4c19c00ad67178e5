"""The language of a page's main text: py3langid's bundled model, offline, in the worker.

py3langid (a maintained fork of langid.py: 141 languages and ``zxx``, "no linguistic
content", a naive Bayes model over byte n-grams, shipped inside the package) was chosen over
lingua (right as often on the simulated web's articles, but 560-780 us a page against 106, 7 s
to load and 1.3 GB with its models preloaded) and fasttext-predict (fast, but its model is a
separate download). Its time grows with the text, so only the first
``LANGUAGE_CHARS`` characters are read (320: about 50 words; 512 cost 50% more for no better
answer on the simulated web's articles): a paragraph names a language as surely as a page
does. The model loads once a worker, in the pool's warm-up (``language_model``).

The model alone named no language on short text (under ``MIN_LETTERS`` it was not asked, and
on two Cyrillic words it is unsure). So ``identify`` counts the letters by script first
(``_census``: the first word of each distinct letter's Unicode name, cached; 13 us on an
article's 320 characters): a script one language writes names it without the model
(``SCRIPT_LANGUAGES``; Han and kana by ``_cjk``); on a script several languages share
(``SCRIPT_DEFAULTS``) a short or unsure text is weighed between that script's languages its
letters allow, the script's default first; a short Latin text is named when the model is
sure enough of it (``SHORT_SCORE``), dialects counted with their neighbour (``FOLDED``).
Each threshold says why, with its measurement on ``bench/bench_language.py``'s sample.
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from operator import itemgetter
from types import MappingProxyType
from typing import Any, Final, NamedTuple

import numpy as np
import numpy.typing as npt

from courtier.content.language_model import identifier, load_model

__all__ = ["identify", "load_model"]

LANGUAGE_CHARS: Final = 320
MIN_LETTERS: Final = 20
"""Texts with fewer letters than this are short: only a script (``SCRIPT_LANGUAGES``,
``SCRIPT_DEFAULTS``) or a sure answer on Latin letters (``LATIN_MIN_LETTERS``,
``SHORT_SCORE``) names their language."""
NO_LANGUAGE: Final = "zxx"
MIN_SCORE: Final = 0.5
"""The identifier's normalised probability below which it is unsure: no language, unless the
text's script names or narrows it."""

SCRIPT_SHARE: Final = 0.6
"""A script decides only when at least this share of the text's letters is in it. Chosen, not
measured: the sample's non-Latin texts have 88-100% of their letters in their own script (the
rest are Latin abbreviations: ``3LDK``); a text more mixed than 60/40 is left to the model."""
CJK_MIN_LETTERS: Final = 2
"""Han, kana and Hangul letters that name a language: one is a syllable or a morpheme, two a
word (新闻, 매물). The sample's 24 Chinese, Japanese and Korean titles have 3-7, and the model
alone named 6 of the 16 Chinese and Japanese ones wrong (Wu for 北京租房, Cantonese for
聯絡我們), the script 2 (Japanese in kanji alone); before, none was read (fewer than
``MIN_LETTERS``)."""
SCRIPT_MIN_LETTERS: Final = 3
"""Letters of another script that name or narrow a language: a short word (Νέα, Дом, خدمات)."""
LATIN_MIN_LETTERS: Final = 6
"""Latin letters below which the model is not asked (a short text's answer costs 25 us): on
one word of up to five letters (Home, Menu, Login, Hotel, Danke, Haus, Ciao) its best guess
was under 0.1 for each of 20 tried, far from ``SHORT_SCORE``; 3 to 6 name the same on the
sample, 8 loses one title (Sepetim), 10 three."""
SHORT_SCORE: Final = 0.4
"""The probability a short Latin text (fewer than ``MIN_LETTERS``) needs, dialects folded into
their language (``FOLDED``); lower than ``MIN_SCORE`` because the model's probabilities are
flatter on a short text (its softmax is tempered by the square root of the text's length:
"Wohnung kaufen" gets 0.60, the same two words four times 0.89). On the sample's 88 Latin
titles and 12 Latin junk texts (``bench/bench_language.py --sweep``): 0.4 names 74 right and
2 wrong, 0.5 64 and 2, 0.6 61 and 1, 0.3 76 and 5."""
SCRIPT_SCORE: Final = 0.5
"""The probability another language of a shared script needs to be named instead of the
script's default (``SCRIPT_DEFAULTS``): as sure as the model must be on any text
(``MIN_SCORE``); below it, and with the default unlikely, no language is named."""

DEFAULT_ODDS: Final = 2.0
"""How much likelier the script's default (``SCRIPT_DEFAULTS``) is than another language of
the script before the text is read (a prior): the default is named when the model gives it at
least 1 / DEFAULT_ODDS of the best one's probability. "Новости недвижимости": Serbian 0.33,
Russian 0.18. On the sample's titles and junk (``--sweep``; Russian, Ukrainian, Bulgarian and
Serbian as many titles each, so Russian far rarer than on the web): 1 names 159 right and 6
wrong, 2 164 and 10, 3 166 and 12, always the default 162 and 21."""

SCRIPT_LANGUAGES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "HANGUL": "ko",
        "THAI": "th",
        "GREEK": "el",  # and Ancient Greek (grc), not a language of pages
        "HEBREW": "he",  # and Biblical Hebrew (hbo); Yiddish the model does not know
        "GEORGIAN": "ka",
        "ARMENIAN": "hy",
        "KHMER": "km",
        "LAO": "lo",
        "MYANMAR": "my",
        "SINHALA": "si",
        "ETHIOPIC": "am",  # Tigrinya too, which the model does not know
        "TAMIL": "ta",
        "TELUGU": "te",
        "KANNADA": "kn",
        "MALAYALAM": "ml",
        "GUJARATI": "gu",
        "GURMUKHI": "pa",
        "ORIYA": "or",
    }
)
"""Scripts (the first word of a letter's Unicode name) that one language writes nearly alone:
their letters name it, and the model is not asked. Han and kana are read together: any kana
is Japanese, Han alone Chinese (``_cjk``)."""

# Cyrillic alphabets: a letter outside a language's alphabet rules the language out.
_RUSSIAN = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
_CYRILLIC: Final = {
    "ru": _RUSSIAN,
    "uk": "абвгґдеєжзиіїйклмнопрстуфхцчшщьюя",
    "bg": "абвгдежзийклмнопрстуфхцчшщъьюя",
    "sr": "абвгдђежзијклљмнњопрстћуфхцчџш",
    "kk": _RUSSIAN + "әғқңөұүһі",
    "be": "абвгдеёжзійклмнопрстуўфхцчшыьэюя",
    "mk": "абвгдѓежзѕијклљмнњопрстќуфхцчџш",
    "uz": "абвгдеёжзийклмнопрстуфхцчшъьэюяўқғҳ",
    "ky": _RUSSIAN + "ңөү",
    "tt": _RUSSIAN + "әөүҗңһ",
    "ba": _RUSSIAN + "әғҙҡңөҫүһ",
    "tg": "абвгғдеёжзиӣйкқлмнопрстуӯфхҳчҷшъэюя",
    "mn": _RUSSIAN + "өү",
}
_CYRILLIC_LETTERS = "".join(sorted(set("".join(_CYRILLIC.values()))))
# Arabic-script letters of one or a few languages (Arabic itself writes none of them).
_PERSIAN = "پچژگکی"
_URDU = "ٹڈڑںے"
_PASHTO = "ټډړږښګځڅۍڼ"
_KURDISH = "ۆێڵڕ"
_UYGHUR = "ۇۈۋ"
SCRIPT_DEFAULTS: Final[Mapping[str, tuple[tuple[str, str], ...]]] = MappingProxyType(
    {
        "CYRILLIC": tuple(
            (code, "".join(c for c in _CYRILLIC_LETTERS if c not in alphabet))
            for code, alphabet in _CYRILLIC.items()
        ),
        "ARABIC": (
            ("ar", _PERSIAN + _URDU + "ھ" + _PASHTO + "ې" + _KURDISH + "ە" + _UYGHUR),
            ("fa", _URDU + _PASHTO + "ې" + _KURDISH + "ە" + _UYGHUR),
            ("ur", _PASHTO + "ې" + _KURDISH + "ە" + _UYGHUR),
            ("ps", _URDU + _KURDISH + _UYGHUR),
            ("sdh", _URDU + _PASHTO + _UYGHUR),
            ("ug", _URDU + _PASHTO + _KURDISH),
        ),
        "DEVANAGARI": (("hi", ""), ("mr", ""), ("ne", ""), ("sa", ""), ("gom", "")),
        "BENGALI": (("bn", "ৰৱ"), ("as", "")),
    }
)
"""Scripts several languages share, each language with the letters that rule it out, the one
with the most web text first: Russian of Cyrillic, Arabic of the Arabic script, Hindi of
Devanagari, Bengali of its script. When the model is unsure on such a text (below
``MIN_SCORE``, or the text short), only the languages its letters allow are weighed, the
first of them the default: it is named unless the model finds another much likelier
(``DEFAULT_ODDS``) and sure enough (``SCRIPT_SCORE``). A short Cyrillic title is Russian
unless a letter says otherwise (``ї``: Ukrainian; ``ј``: Serbian) or the model is sure of
another language; an Arabic-script one Arabic unless it has Persian letters (``گ``, ``ی``)."""

FOLDED: Final[Mapping[str, str]] = MappingProxyType(
    {
        "pcm": "en",
        "lb": "de",
        "an": "es",
        "ext": "es",
        "oc": "fr",
        "wa": "fr",
        "gcf": "fr",
        "gcr": "fr",
        "vec": "it",
        "lij": "it",
        "nn": "no",
        "fy": "nl",
        "crh": "tr",
        "ltg": "lv",
        "ary": "ar",
        "arz": "ar",
    }
)
"""Varieties the model tells from a larger neighbour only on long text (on the sample's
titles it gives Nigerian Pidgin to "Apartment for sale", Aragonese to "Casas en alquiler"):
on a short text, or an unsure one of a shared script (``SCRIPT_DEFAULTS``), their probability
counts for the neighbour's. A sure answer (``MIN_SCORE`` on ``MIN_LETTERS``) still names
them."""


def identify(text: str) -> tuple[str | None, float]:
    """(code, probability) of ``text``: ISO 639-1 where the language has one (``de``), else
    ISO 639-3 (``yue``); (None, p) when too short, unsure, or no language (``zxx``).

    The script of the letters comes first: one a language writes alone (Hangul, Thai, Greek;
    kana; Han) names it without the model, and the probability is the share of the letters
    in that script. Otherwise the model answers; if it is unsure, or the text is short, its
    answer is read again within the script (``_within_script``)."""
    sample = text[:LANGUAGE_CHARS]
    census = _census(sample)
    letters = sum(census.values())
    if not letters:
        return None, 0.0
    script, count = max(census.items(), key=itemgetter(1))
    cjk = census.get("HAN", 0) + census.get("KANA", 0) + census.get("HANGUL", 0)
    if cjk >= CJK_MIN_LETTERS and cjk >= SCRIPT_SHARE * letters:
        return _cjk(census, cjk), round(cjk / letters, 3)
    if count < SCRIPT_SHARE * letters:
        script = ""  # no script decides
    elif script in SCRIPT_LANGUAGES and count >= SCRIPT_MIN_LETTERS:
        return SCRIPT_LANGUAGES[script], round(count / letters, 3)
    short = letters < MIN_LETTERS
    # Read again within the script: a short text all of Latin letters (on a long one an
    # unsure model more often meant a mixed text, "Hallo and bonjour, ciao amigo, danke merci
    # grazie", than a dialect's share: folding named 2 more of the sample's 57 long Latin
    # texts right; a short one with other letters, "Apple 新品 iPhone", the model gives to
    # Cantonese), any text of a shared script.
    latin = script == "LATIN" and short and LATIN_MIN_LETTERS <= count == letters
    within = latin or (script in SCRIPT_DEFAULTS and count >= SCRIPT_MIN_LETTERS)
    if short and not within:
        return None, 0.0
    model = identifier()
    columns = _columns(model)
    probabilities = _probabilities(model, columns, sample)
    top = int(probabilities.argmax())
    language, score = columns.classes[top], round(float(probabilities[top]), 3)
    if language == NO_LANGUAGE:
        return None, score
    if not short and score >= MIN_SCORE:
        return language, score  # a sure answer names even a dialect (``FOLDED``)
    if not within:
        return None, score
    return _within_script(script, sample, columns, probabilities, score)


def _within_script(
    script: str,
    sample: str,
    columns: _Columns,
    probabilities: npt.NDArray[np.float64],
    top_score: float,
) -> tuple[str | None, float]:
    """The model's answer read again for a short Latin text, or an unsure or short text of a
    shared script: dialects counted with their language (``FOLDED``); on a shared script
    (``SCRIPT_DEFAULTS``) only its languages the letters allow, its default unless another is
    much likelier."""
    folded = np.bincount(columns.fold, weights=probabilities, minlength=len(columns.labels))
    if script == "LATIN":
        first = int(folded.argmax())
        score = round(float(folded[first]), 3)
        if score >= SHORT_SCORE:
            return columns.labels[first], score
        return None, top_score
    seen = {char.lower() for char in set(sample)}
    allowed = [
        (code, float(folded[columns.position[code]]))
        for code, ruled_out in SCRIPT_DEFAULTS[script]
        if code in columns.position and seen.isdisjoint(ruled_out)
    ]
    if not allowed:
        return None, top_score
    default, default_score = allowed[0]
    best, best_score = max(allowed, key=itemgetter(1))
    if default_score * DEFAULT_ODDS >= best_score:
        return default, round(default_score, 3)
    if best_score >= SCRIPT_SCORE:
        return best, round(best_score, 3)
    return None, top_score


class _Columns(NamedTuple):
    """The model's classes, and where each counts once dialects are folded (``FOLDED``)."""

    classes: tuple[str, ...]
    labels: tuple[str, ...]
    fold: npt.NDArray[np.intp]
    """Each class's label, as its index in ``labels``."""
    position: Mapping[str, int]
    """Each label's index in ``labels``."""


@lru_cache(maxsize=1)  # the worker's one model; a replaced one is not kept alive
def _columns(identifier: Any) -> _Columns:
    classes = tuple(str(code) for code in identifier.nb_classes)
    labels = tuple(dict.fromkeys(FOLDED.get(code, code) for code in classes))
    index = {label: i for i, label in enumerate(labels)}
    fold = np.array([index[FOLDED.get(code, code)] for code in classes], dtype=np.intp)
    return _Columns(classes, labels, fold, MappingProxyType(index))


def _probabilities(identifier: Any, columns: _Columns, sample: str) -> npt.NDArray[np.float64]:
    """The model's probability of each of its classes (a label's second column holds 0).

    py3langid's ``_decide`` is what its ``classify`` and ``rank`` both read, without the
    Python loop and sort ``rank`` adds (26 us against 53 for a 20-letter title); its public
    ``rank`` is read where a version has no ``_decide``."""
    decide = getattr(identifier, "_decide", None)
    if callable(decide):
        return np.asarray(decide(sample), dtype=np.float64)
    ranked = dict(identifier.rank(sample))
    return np.array([ranked.pop(code, 0.0) for code in columns.classes], dtype=np.float64)


def _cjk(census: Mapping[str, int], cjk: int) -> str:
    """Korean when Hangul is most of the CJK letters, Japanese with any kana, else Chinese
    (Japanese written in kanji alone, 会社概要, reads as Chinese: a known miss)."""
    if census.get("HANGUL", 0) * 2 > cjk:
        return "ko"
    return "ja" if census.get("KANA", 0) else "zh"


_SCRIPTS: dict[str, str] = {}
"""Letter → script, filled as letters are met, up to ``_SCRIPTS_KEPT`` letters (1.7 MB:
every alphabet and the few thousand Han characters that make most of a Chinese or Japanese
text; a letter past them is looked up each time, 2 us)."""
_SCRIPTS_KEPT: Final = 1 << 14
_ALIASES: Final = {
    "CJK": "HAN",
    "IDEOGRAPHIC": "HAN",
    "HIRAGANA": "KANA",
    "KATAKANA": "KANA",
    "KATAKANA-HIRAGANA": "KANA",
}


def _script(letter: str) -> str:
    """The first word of the letter's Unicode name (``CYRILLIC``), Han and kana by one name
    each, the width forms by their script's."""
    words = unicodedata.name(letter, "").split(" ", 2)
    word = words[1] if words[0] in ("HALFWIDTH", "FULLWIDTH") and len(words) > 1 else words[0]
    word = sys.intern(_ALIASES.get(word, word))
    if len(_SCRIPTS) < _SCRIPTS_KEPT:
        _SCRIPTS[letter] = word
    return word


def _census(sample: str) -> dict[str, int]:
    """Letters (``str.isalpha``) of ``sample`` by script, counted over its distinct characters
    (a page's 320 characters hold a few dozen): 13 us for the first 320 characters of an
    article of the simulated web, where counting its letters took 6.5, as it still does for
    an ASCII text (``bench/bench_language.py --articles``)."""
    if sample.isascii():  # a flag of the string: no scan
        letters = sum(map(str.isalpha, sample))
        return {"LATIN": letters} if letters else {}
    census: dict[str, int] = {}
    for char in set(sample):
        if char.isalpha():
            script = _SCRIPTS.get(char)
            if script is None:
                script = _script(char)
            census[script] = census.get(script, 0) + sample.count(char)
    return census
