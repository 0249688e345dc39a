"""Token profiles (SPEC §4): the per-tokenizer weights of the estimator's features, the fitted table
they come from, and the choice of a profile by model name. The ``_FITTED`` table is written by
``python -m bench.fit_estimator`` (it prints the block to paste here); ``tokens`` does the counting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace

# The estimator's features: character-class counts (see text_features); one weight each per profile.
FEATURES: tuple[str, ...] = (
    "cjk",
    "cjk_punct",
    "symbol",
    "other",
    "astral",
    "letter",
    "word",
    "upper",
    "case_change",
    "digit",
    "digit_run",
    "punct",
    "punct_run",
    "newline",
    "indent",
    "space_pair",
)


@dataclass(frozen=True)
class TokenProfile:
    """Per-class weights (tokens per unit) for one tokenizer family, plus fixed overheads."""

    name: str
    cjk: float  # per CJK ideograph / hangul syllable
    cjk_punct: float  # per CJK punctuation, kana or full-width character
    symbol: float  # per U+2000-2FFF character (curly quotes, dashes, arrows, box drawing)
    other: float  # per other BMP non-ASCII character (accented Latin, Greek, Cyrillic, ...)
    astral: float  # per character outside the BMP (emoji)
    letter: float  # per ASCII letter
    word: float  # per run of ASCII letters
    upper: float  # per upper-case letter
    case_change: float  # per lower->upper change inside a run (camelCase, base64)
    digit: float  # per digit
    digit_run: float  # per run of digits
    punct: float  # per ASCII punctuation / JSON symbol
    punct_run: float  # per run of ASCII punctuation
    newline: float  # per newline
    indent: float  # per line starting with whitespace
    space_pair: float  # per pair of consecutive spaces
    message_overhead: float = 4.0  # role markers and separators per message (the role itself is added)
    reply_overhead: float = 3.0  # priming of the assistant reply, once per request
    tool_call_overhead: float = 4.0  # per tool call, besides its name, id and JSON arguments
    tool_overhead: float = 8.0  # per tool schema, besides its JSON
    image: int = 1000  # fixed cost per image block
    # Derived in __post_init__: the text weights in FEATURES order, and the cached hash of the fields above.
    _weights: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_weights", tuple(getattr(self, k) for k in FEATURES))
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, f.name) for f in fields(self) if f.init)))

    def __hash__(self) -> int:  # cached: profiles are part of every cache key
        return self._hash

    def scaled(self, factor: float, name: str | None = None) -> TokenProfile:
        """This profile with every text weight multiplied by ``factor`` (per-agent calibration)."""
        weights = {k: getattr(self, k) * factor for k in FEATURES}
        return replace(self, name=name or f"{self.name}*{factor:.3f}", **weights)


# Fitted by ``python -m bench.fit_estimator`` on the FIT halves of the real traces (see its output).
_FITTED: dict[str, dict[str, float]] = {
    "cl100k": {
        "cjk": 1.0962,
        "cjk_punct": 1.122,
        "symbol": 0.4662,
        "other": 1.0,
        "astral": 2.0,
        "letter": 0.0575,
        "word": 0.7172,
        "upper": 0.1939,
        "case_change": 1.3319,
        "digit": 0.2148,
        "digit_run": 1.4304,
        "punct": 0.0719,
        "punct_run": 0.7538,
        "newline": 0.197,
        "indent": 0.3899,
        "space_pair": 0.0847,
    },
    "qwen": {
        "cjk": 0.5148,
        "cjk_punct": 1.4273,
        "symbol": 0.6206,
        "other": 0.8,
        "astral": 2.0,
        "letter": 0.0605,
        "word": 0.7019,
        "upper": 0.1926,
        "case_change": 1.2381,
        "digit": 0.9114,
        "digit_run": 0.9144,
        "punct": 0.0704,
        "punct_run": 0.7588,
        "newline": 0.1721,
        "indent": 0.4273,
        "space_pair": 0.0803,
    },
    "max": {
        "cjk": 1.0997,
        "cjk_punct": 0.9221,
        "symbol": 0.4447,
        "other": 1.0,
        "astral": 2.0,
        "letter": 0.0592,
        "word": 0.7106,
        "upper": 0.195,
        "case_change": 1.246,
        "digit": 0.9061,
        "digit_run": 0.898,
        "punct": 0.0696,
        "punct_run": 0.7593,
        "newline": 0.1523,
        "indent": 0.4549,
        "space_pair": 0.0807,
    },
}


def _profile(name: str, weights: dict[str, float], *, image: int, **overheads: float) -> TokenProfile:
    return TokenProfile(name=name, image=image, **{k: weights.get(k, 1.0) for k in FEATURES}, **overheads)


_CL100K = _profile("cl100k", _FITTED["cl100k"], message_overhead=3.0, image=765)
# No offline o200k tokenizer is available to fit against; o200k is at least as efficient as cl100k
# on every script (markedly so on CJK), so the cl100k weights over-estimate it slightly: safe side.
_O200K = _profile("o200k", _FITTED["cl100k"], message_overhead=3.0, image=765)
_QWEN = _profile("qwen", _FITTED["qwen"], message_overhead=4.0, image=1280)


# The conservative profile (unknown models): fitted against max(cl100k, Qwen) per sample, then raised by
# a margin for tokenizers we cannot measure (Claude, Gemini, Llama...), so it errs towards more tokens.
# (Fitting the per-sample max rather than taking the per-class max of the family weights avoids
# double-charging classes the families split differently: cl100k charges digit *runs*, Qwen digits.)
CONSERVATIVE_MARGIN = 1.10
_CONSERVATIVE = _profile(
    "conservative",
    {k: v * CONSERVATIVE_MARGIN for k, v in _FITTED["max"].items()},
    message_overhead=4.0,
    tool_call_overhead=5.0,
    tool_overhead=10.0,
    image=1536,
)
DEFAULT_PROFILE = _CONSERVATIVE

PROFILES: dict[str, TokenProfile] = {p.name: p for p in (_CL100K, _O200K, _QWEN, DEFAULT_PROFILE)}

# Known-models table: (name prefix, profile name). First match wins; unknown models -> DEFAULT_PROFILE.
_MODEL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k"),
    ("chatgpt-4o", "o200k"),
    ("gpt-4.1", "o200k"),
    ("gpt-4.5", "o200k"),
    ("gpt-5", "o200k"),
    ("gpt-oss", "o200k"),
    ("o1", "o200k"),
    ("o3", "o200k"),
    ("o4", "o200k"),
    ("gpt-4", "cl100k"),
    ("gpt-3.5", "cl100k"),
    ("text-embedding-3", "cl100k"),
    ("text-embedding-ada", "cl100k"),
    ("qwen", "qwen"),
    ("qwq", "qwen"),
    ("qvq", "qwen"),
    ("deepseek", "qwen"),
)


# An Ollama tag after the model's name (``qwen2.5:7b``, ``llama3.1:8b-instruct-q4_K_M``, ``mistral:latest``):
# a size, a version, a quantisation or a variant word, never a model family.
_TAG = re.compile(
    r"latest|v?\d[\w.+-]*|(?:i?q\d|fp\d|bf16|f16|int\d|e\d+b)[\w.+-]*"
    r"|(?:instruct|chat|text|code|base|vision|thinking|mini|small|medium|large)(?:[-_.][\w.+-]*)?"
)


def model_key(model_name: str | None) -> str:
    """A model name as the known-models tables look it up: lower case, without a provider or
    organisation prefix and without an Ollama tag (``openai:gpt-4o`` and ``Qwen/Qwen2.5-7B`` become
    ``gpt-4o``, ``qwen2.5-7b``; ``ollama:qwen2.5:7b`` becomes ``qwen2.5``)."""
    name = (model_name or "").strip().lower().rsplit("/", 1)[-1]
    parts = [part for part in name.split(":") if part]
    # Tags come last, a provider first: the model is the last part that is not a tag.
    while len(parts) > 1 and _TAG.fullmatch(parts[-1]):
        parts.pop()
    return parts[-1] if parts else ""


def profile_for_model(model_name: str | None) -> TokenProfile:
    """The profile for a model name (``gpt-4o``, ``openai:gpt-4o``, ``Qwen/Qwen2.5-7B``...)."""
    name = model_key(model_name)
    if not name:
        return DEFAULT_PROFILE
    for prefix, profile_name in _MODEL_PREFIXES:
        if name.startswith(prefix):
            return PROFILES[profile_name]
    return DEFAULT_PROFILE
