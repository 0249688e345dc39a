"""Script-aware estimation of a text (SPEC 4).

The estimate of a text is a weighted sum of character-class counts: CJK ideographs, CJK/full-width
punctuation, other non-ASCII blocks, ASCII letters and letter runs (words), upper-case letters and
lower->upper changes (camelCase, base64 and other random-looking strings split into many tokens),
digits and digit runs, ASCII punctuation / JSON symbols and their runs, newlines and indentation,
plus a floor for degenerate runs (one character or a short pattern repeated, ASCII or CJK). The weights
form a :class:`~context_engine.tokens.profiles.TokenProfile` per tokenizer family; they are checked by
``bench/estimator_accuracy.py`` on the CHECK half of the real traces (never the text they were fitted on).
"""

from __future__ import annotations

import math
import re

from context_engine.tokens.profiles import DEFAULT_PROFILE, FEATURES, TokenProfile

# Stored estimates name it: a new estimator (different figures for the same text) gets a new name.
ESTIMATOR_NAME = "script-aware-v3"


# ---------------------------------------------------------------------------------------------
# Text
#
# One pass of ``bytes.translate`` maps the UTF-8 bytes of the text to a class string (one byte per
# character: continuation bytes are deleted, lead bytes name their script block); the features are
# then ``bytes.count`` calls on that string and on a coarser "run class" string. Everything runs in C
# and is linear; no per-token Python objects are created.


def _class_table() -> bytes:
    table = bytearray(b"." * 256)  # control characters and ASCII punctuation / JSON symbols
    for i in range(ord("a"), ord("z") + 1):
        table[i] = ord("a")
    for i in range(ord("A"), ord("Z") + 1):
        table[i] = ord("A")
    for i in range(ord("0"), ord("9") + 1):
        table[i] = ord("0")
    table[ord(" ")] = table[ord("\t")] = table[ord("\r")] = ord(" ")
    table[ord("\n")] = ord("\n")
    for i in range(0xC0, 0xE0):  # 2-byte: Latin-1 supplement, accented Latin, Greek, Cyrillic, Arabic...
        table[i] = ord("l")
    table[0xE0] = table[0xE1] = ord("l")  # Indic, Thai, Georgian... (rare)
    table[0xE2] = ord("g")  # U+2000-2FFF: general punctuation, arrows, math, box drawing (+ CJK radicals)
    table[0xE3] = ord("k")  # U+3000-3FFF: CJK symbols and punctuation, kana, ext. A
    for i in range(0xE4, 0xEA):  # U+4000-9FFF: CJK unified ideographs
        table[i] = ord("c")
    for i in range(0xEA, 0xEE):  # U+A000-DFFF: Yi, Hangul syllables
        table[i] = ord("c")
    table[0xEE] = ord("l")  # private use
    table[0xEF] = ord("k")  # U+F000-FFFF: compatibility ideographs, full-width forms
    for i in range(0xF0, 0x100):  # 4-byte: emoji, rare ideographs
        table[i] = ord("e")
    return bytes(table)


_CLASS_TABLE = _class_table()
_CONTINUATION = bytes(range(0x80, 0xC0))
# Run classes: letters -> "a", digits -> "0", ASCII punctuation -> ".", anything else -> " ".
_LETTER_RUNS = bytes(ord("a") if b in b"aA" else ord(" ") for b in range(256))
_DIGIT_RUNS = bytes(ord("0") if b == ord("0") else ord(" ") for b in range(256))
_PUNCT_RUNS = bytes(ord(".") if b == ord(".") else ord(" ") for b in range(256))


def _runs(classes: bytes, table: bytes, symbol: bytes) -> int:
    runs = classes.translate(table)
    return runs.count(b" " + symbol) + (runs[:1] == symbol)


def _features(text: str) -> tuple[int, ...]:
    c = text.encode("utf-8", "surrogatepass").translate(_CLASS_TABLE, _CONTINUATION)
    count = c.count
    if text.isascii():
        cjk = cjk_punct = symbol = other = astral = 0
    else:
        cjk, cjk_punct, symbol, other, astral = (
            count(b"c"),
            count(b"k"),
            count(b"g"),
            count(b"l"),
            count(b"e"),
        )
    lower, upper = count(b"a"), count(b"A")
    letter, digit, punct = lower + upper, count(b"0"), count(b".")
    return (
        cjk,
        cjk_punct,
        symbol,
        other,
        astral,
        letter,
        _runs(c, _LETTER_RUNS, b"a") if letter else 0,
        upper,
        count(b"aA") if upper else 0,
        digit,
        _runs(c, _DIGIT_RUNS, b"0") if digit else 0,
        punct,
        _runs(c, _PUNCT_RUNS, b".") if punct else 0,
        count(b"\n"),
        count(b"\n "),
        count(b"  "),
    )


def text_features(text: str) -> dict[str, int]:
    """Character-class counts of ``text`` (the estimator's features), by name."""
    return dict(zip(FEATURES, _features(text), strict=True))


def _bit_table(classes: dict[bytes, int]) -> bytes:
    table = bytearray(256)
    for cls, bits in classes.items():
        table[cls[0]] = bits
    return bytes(table)


# The hot path counts the classes bit-parallel: the class string becomes one flag byte per character,
# read as one big integer; a class count is a popcount of its bit, a run start is a class bit whose
# previous byte lacks it (``bits & ~(bits << 8)``), a pair is a bit AND the next byte's bit shifted
# down. Each is a pass of CPython's big-integer arithmetic over 30-bit digits, several times cheaper
# than a ``bytes.count`` pass, and gives exactly the counts of :func:`_features`.
_LOWER, _UPPER, _DIGIT, _PUNCT, _NEWLINE, _SPACE, _LETTER = 1, 2, 4, 8, 16, 32, 64
_ASCII_BITS = _bit_table(
    {
        b"a": _LOWER | _LETTER,
        b"A": _UPPER | _LETTER,
        b"0": _DIGIT,
        b".": _PUNCT,
        b"\n": _NEWLINE,
        b" ": _SPACE,
    }
)
_RAW_ASCII_BITS = bytes(_ASCII_BITS[cls] for cls in _CLASS_TABLE)  # from the text's bytes directly
_OTHER_BITS = _bit_table({b"c": 1, b"k": 2, b"g": 4, b"l": 8, b"e": 16})  # the non-ASCII classes
_ONES: dict[int, int] = {}  # length -> 0x0101...01: one set bit per byte


def _ones(length: int) -> int:
    ones = _ONES.get(length)
    if ones is None:
        ones = int.from_bytes(b"\x01" * length, "little")
        if len(_ONES) < 4096:
            _ONES[length] = ones
    return ones


def _weighted(raw: bytes, ascii_only: bool, weights: tuple[float, ...]) -> float:
    """``sum(features(text) * weights)`` for ``raw``, the UTF-8 bytes of ``text``: the hot path of every
    estimate (see the bit layout above)."""
    (cjk, cjk_punct, symbol, other, astral, letter, word, upper, case_change) = weights[:9]
    (digit, digit_run, punct, punct_run, newline, indent, space_pair) = weights[9:]
    total = 0.0
    if ascii_only:  # one byte per character already: straight to the flags
        c = None
        one = _ones(len(raw))
        bits = int.from_bytes(raw.translate(_RAW_ASCII_BITS), "little")
    else:
        c = raw.translate(_CLASS_TABLE, _CONTINUATION)
        one = _ones(len(c))
        bits = int.from_bytes(c.translate(_ASCII_BITS), "little")
        o = int.from_bytes(c.translate(_OTHER_BITS), "little")
        total += (
            cjk * (o & one).bit_count()
            + cjk_punct * ((o >> 1) & one).bit_count()
            + symbol * ((o >> 2) & one).bit_count()
            + other * ((o >> 3) & one).bit_count()
            + astral * ((o >> 4) & one).bit_count()
        )
    runs = bits & ~(bits << 8)  # run starts, every class at once
    letters = (bits >> 6) & one
    if letters:
        total += letter * letters.bit_count() + word * ((runs >> 6) & one).bit_count()
        uppers = (bits >> 1) & one
        if uppers:
            lowers = bits & one
            total += upper * uppers.bit_count() + case_change * (lowers & (uppers >> 8)).bit_count()
    digits = (bits >> 2) & one
    if digits:
        total += digit * digits.bit_count() + digit_run * ((runs >> 2) & one).bit_count()
    puncts = (bits >> 3) & one
    if puncts:
        total += punct * puncts.bit_count() + punct_run * ((runs >> 3) & one).bit_count()
    spaces = (bits >> 5) & one
    newlines = (bits >> 4) & one
    if newlines:
        total += newline * newlines.bit_count() + indent * (newlines & (spaces >> 8)).bit_count()
    if spaces & (spaces >> 8):  # pairs of spaces: counted without overlap, as the weights were fitted
        total += space_pair * (raw.translate(_CLASS_TABLE) if c is None else c).count(b"  ")
    return total


# Degenerate text: a long run of one character or of a short pattern. BPE vocabularies have few merges
# for such runs, so they cost far more per character than words do. Measured on cl100k and Qwen for
# units of 1-4 printable ASCII characters repeated: up to 1 token per character for a pattern
# (``'ab' * 2000``: 2,000 tokens, ``'zq' * 2000``: 4,000; a space rides on the next character's token:
# ``'_ ' * 100``: 100), up to 0.5 for one repeated letter, 1/3 for
# one repeated digit (cl100k groups digits by three), and per punctuation character from 1/64 (``-``,
# ``=``, ``*``...: long merges, already over-counted by the weights) to 0.5 (``"``, ``[``, ``{``...);
# the class weights charge a letter ~0.06. Such runs are rare in real text, so the regex only looks
# where a cheap test finds one: a run with a period of 1, 2, 3, 4, 6 or 12 equals itself shifted by 12
# bytes, i.e. the text XOR itself shifted by 12 bytes has a run of zero bytes there (~1 ns/byte).
_LONG_RUN = 36
_SHIFT_BITS = 8 * 12
_ZEROS = bytes(_LONG_RUN - 12)
_PERIODIC = re.compile(rb"([ -~]{1,4}?)\1{7,}")  # a unit of 1-4 printable ASCII characters, 8+ times
PATTERN_FLOOR = 1.0  # tokens per character of a repeated 2-4 character pattern (the worst case measured)
LETTER_FLOOR = 0.5  # ... of one repeated letter
DIGIT_FLOOR = 1 / 3  # ... of one repeated digit
# ... of one repeated punctuation character, where the weights would charge less (measured maxima).
PUNCT_FLOORS: dict[str, float] = {
    **dict.fromkeys("\"&'[]`{}", 0.5),
    **dict.fromkeys("$()?@\\^|", 0.25),
    **dict.fromkeys("!,:<>", 0.125),
    ";": 0.0625,
}


def _floor(unit: str) -> float:
    if unit.isspace():
        return 0.0
    if " " in unit:  # a space joins the next character's token (" _", " T"): the rest cost one each
        return (len(unit) - unit.count(" ")) / len(unit) * PATTERN_FLOOR
    if len(set(unit)) > 1:
        return PATTERN_FLOOR
    char = unit[0]
    if char.isalpha():
        return LETTER_FLOOR
    return DIGIT_FLOOR if char.isdigit() else PUNCT_FLOORS.get(char, 0.0)


# Degenerate CJK: a run of one ideograph (or Hangul syllable) or of a short unit of them repeated. The
# weights charge what real text costs (Qwen: ~0.51 per ideograph, because common words are single
# tokens); a repeated character has no such merges. Assumption, measured with cl100k and Qwen on the
# 1,500 commonest ideographs of the traces: a run of one common ideograph costs one token per character
# (a few pairs, like '哈哈', merge: fewer), a run of a 2-4 character unit 0.75-1.0 per character
# (median); rarer characters cost 2-3 under cl100k (not covered: ordinary text with them is under-counted
# alike). A unit of 1, 2 or 4 characters (3, 6 or 12 bytes) is 12-periodic, so the ASCII test above finds
# these runs at no extra pass; a 3-character unit (9 bytes) is not, and keeps the weights' estimate
# (another pass over every non-ASCII text would cost ~12% of its estimate).
_CJK_LONG_RUN = 12  # characters: 36 bytes, the shortest run the 12-byte test finds
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff"
_CJK_PERIODIC = re.compile(f"([{_CJK}]{{1,4}}?)\\1{{2,}}")  # a unit of 1-4 ideographs, 3+ times
CJK_FLOOR = 1.0  # tokens per character of a repeated CJK unit


def _degenerate(raw: bytes, weights: tuple[float, ...]) -> float:
    """What the periodic runs in ``raw`` (UTF-8) cost beyond their weighted features (0 for normal text)."""
    value = int.from_bytes(raw, "little")
    same = (value ^ (value >> _SHIFT_BITS)).to_bytes(len(raw), "little")  # 0 where raw[i] == raw[i + 12]
    extra = 0.0
    start = same.find(_ZEROS)
    while start >= 0:
        tail = same[start:]
        end = start + len(tail) - len(tail.lstrip(b"\x00"))
        stretch = raw[start : end + 12]  # 12-periodic: holds any run of period 1-4 found here
        if not stretch.isspace():  # indentation and blank lines: the weights already over-count them
            for match in _PERIODIC.finditer(stretch):
                length = match.end() - match.start()
                floor = _floor(match.group(1).decode()) * length if length >= _LONG_RUN else 0.0
                if floor:
                    extra += max(0.0, floor - _weighted(match.group(), True, weights))
            if not stretch.isascii():
                extra += _cjk_extra(stretch.decode("utf-8", "ignore"), weights)
        start = same.find(_ZEROS, end)
    return extra


def _cjk_extra(stretch: str, weights: tuple[float, ...]) -> float:
    extra = 0.0
    for match in _CJK_PERIODIC.finditer(stretch):
        run = match.group()
        if len(run) >= _CJK_LONG_RUN:
            extra += max(0.0, CJK_FLOOR * len(run) - _weighted(run.encode(), False, weights))
    return extra


def estimate_text(text: str, profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """Estimated tokens of ``text`` under ``profile``; 0 for empty text."""
    if not text:
        return 0
    raw = text.encode("utf-8", "surrogatepass")
    weights = profile._weights
    total = _weighted(raw, text.isascii(), weights)
    if len(raw) >= _LONG_RUN:
        total += _degenerate(raw, weights)
    return max(1, math.ceil(total))
