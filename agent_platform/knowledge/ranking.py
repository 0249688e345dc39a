"""Portable relevance ranking (BM25 over words and CJK character bigrams), used where PostgreSQL is not.

Pure functions: text in, tokens and scores out. Latin words are lower-cased and lightly stemmed; runs
of CJK characters, which have no spaces between words, become overlapping character bigrams.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

BM25_K1 = 1.2
BM25_B = 0.75

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_CJK_RUN = re.compile(rf"[{_CJK}]")
_SUFFIXES = ("ations", "ation", "ions", "ion", "ings", "ing", "ies", "ers", "er", "ed", "es", "s")
STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it me of on or so that the this to "
    "was what when where which who why will with you your".split()
)


def stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def tokenize(text: str, *, drop_stop_words: bool = False) -> list[str]:
    tokens: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        run = match.group()
        if _CJK_RUN.match(run):
            tokens.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        elif not (drop_stop_words and run in STOP_WORDS):
            tokens.append(stem(run))
    return tokens


def query_terms(query: str) -> list[str]:
    """The distinct search terms of a query, stop words dropped (unless nothing else is left)."""
    terms = tokenize(query, drop_stop_words=True) or tokenize(query)
    return list(dict.fromkeys(terms))


def split_query(query: str) -> tuple[list[str], list[str]]:
    """A query's distinct words (lower-cased, not stemmed, stop words dropped unless nothing else is
    left) and its CJK bigrams: the inputs of the PostgreSQL ranking, which stems words itself."""
    words: list[str] = []
    bigrams: list[str] = []
    for match in _TOKEN.finditer(query.lower()):
        run = match.group()
        if _CJK_RUN.match(run):
            bigrams.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        else:
            words.append(run)
    kept = [word for word in words if word not in STOP_WORDS] or words
    return list(dict.fromkeys(kept)), list(dict.fromkeys(bigrams))


def bm25_scores(
    terms: list[str], documents: Iterable[str], *, corpus_size: int, average_length: float | None = None
) -> list[float]:
    """BM25 of each document for ``terms``.

    ``documents`` must include every document of the corpus that contains any of the terms, so the
    document frequencies counted here are the corpus's; ``corpus_size`` is the whole corpus.
    """
    token_counts = [Counter(tokenize(document)) for document in documents]
    if not token_counts:
        return []
    lengths = [sum(counts.values()) for counts in token_counts]
    average = average_length or (sum(lengths) / len(lengths)) or 1.0
    scores = [0.0] * len(token_counts)
    for term in terms:
        frequency = sum(1 for counts in token_counts if term in counts)
        if not frequency:
            continue
        idf = math.log(1 + (corpus_size - frequency + 0.5) / (frequency + 0.5))
        for i, counts in enumerate(token_counts):
            tf = counts.get(term, 0)
            if tf:
                norm = tf + BM25_K1 * (1 - BM25_B + BM25_B * lengths[i] / average)
                scores[i] += idf * tf * (BM25_K1 + 1) / norm
    return scores
