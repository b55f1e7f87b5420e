"""A cheap guess of a text's language, enough to tell a translation from a paraphrase: the writing
system of its letters, and for Latin script counts of the commonest function words of English and
six other European languages. It answers only when the evidence is clear (None otherwise), so a
short or code-only answer is never judged."""

from __future__ import annotations

import re
import unicodedata

STOPWORDS = {
    "en": "the and of to is that it for with as are this be on not by you can which have from or will was an they "
          "their more also these has what how when there would should about into than other such its we if but "
          "one all been your",
    "fr": "le la les des du et est une un que qui dans pour pas sur au aux avec ce cette sont ou par plus peut mais "
          "leur elle il nous vous être ont aussi comme ces son sa ses très",
    "es": "el los las del y es una un que en por para con se su sus como más pero son al lo este esta también "
          "puede muy hay ser sobre entre cuando porque está están",
    "de": "der die das und ist nicht ein eine zu den von mit sich des auf für im dem auch es an werden aus er sie "
          "wird bei oder einer sind können kann wie nach über durch",
    "it": "il di che è e la per un una non sono con del della gli le si come più anche ma questo questa può nel "
          "alla dei delle molto",
    "pt": "o os as de que e do da dos das em um uma para com não é se por mais como mas ao na no são pode também "
          "muito sua seu isso está",
    "nl": "de het een en van is dat niet op te zijn met voor er ook aan om als maar bij wordt kan deze dit naar of "
          "uit worden",
}
_ALL = [w for words in STOPWORDS.values() for w in set(words.split())]
_WORDS = {lang: frozenset(w for w in words.split() if _ALL.count(w) == 1) for lang, words in STOPWORDS.items()}
"""Each language's words that no other list holds (``que``, ``de``, ``la`` tell nothing apart)."""
NAMES = {"en": "English", "fr": "French", "es": "Spanish", "de": "German", "it": "Italian", "pt": "Portuguese",
         "nl": "Dutch"}

MIN_HITS = 5
"""Function words a text needs before its language is named."""
MARGIN = 2.0
"""How many times the runner-up's count the winner's must be."""
MAX_CHARS = 4000
"""Only the start of a text is read: enough to tell, and cheap on long answers."""

_WORD = re.compile(r"[^\W\d_]+")


def _script(text: str) -> str | None:
    """The writing system of most letters (``LATIN``, ``CYRILLIC``, ``CJK`` ...), or None without letters."""
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            script = name.split(" ", 1)[0] if name else "OTHER"
            counts[script] = counts.get(script, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else None


def guess_language(text: str) -> str | None:
    """An ISO 639-1 code from :data:`STOPWORDS` for Latin-script text, the script's name in lower
    case for other scripts (``cyrillic``, ``cjk``, ``arabic``...), or None where it is unclear."""
    text = text[:MAX_CHARS]
    script = _script(text)
    if script is None:
        return None
    if script != "LATIN":
        return script.lower()
    words = _WORD.findall(text.lower())
    hits = sorted(((sum(w in vocab for w in words), lang) for lang, vocab in _WORDS.items()), reverse=True)
    (best, lang), (second, _) = hits[0], hits[1]
    return lang if best >= MIN_HITS and best >= MARGIN * second else None


def language_name(code: str) -> str:
    return NAMES.get(code, code)
