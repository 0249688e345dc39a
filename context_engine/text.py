"""The one owner of what text may be stored or sent: no NUL, no lone surrogate.

PostgreSQL text and JSON columns refuse NUL; UTF-8 (the databases, Redis, the checkpoint serializer,
JSON on the wire) cannot encode a lone surrogate such as ``"\\ud800"``, which a model or a JSON client
can send as an escape. Each becomes U+FFFD; a surrogate pair split in two code points is joined back.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage

REPLACEMENT = "\ufffd"
# Fields of a LangChain message that can carry text (tool call arguments and raw provider payloads too).
MESSAGE_TEXT_FIELDS = ("content", "additional_kwargs", "tool_calls", "invalid_tool_calls", "name")


def clean_str(text: str, *, keep_nul: bool = False) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD (unchanged, and cheap, when clean)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text if keep_nul or "\x00" not in text else text.replace("\x00", REPLACEMENT)


def clean_text(value: Any, *, keep_nul: bool = False) -> Any:
    """``value`` with every string in it (nested lists, tuples and dict keys and values) cleaned."""
    if isinstance(value, str):
        return clean_str(value, keep_nul=keep_nul)
    if isinstance(value, (list, tuple)):
        return type(value)(clean_text(item, keep_nul=keep_nul) for item in value)
    if isinstance(value, dict):
        return {clean_text(k, keep_nul=keep_nul): clean_text(v, keep_nul=keep_nul) for k, v in value.items()}
    return value


def clean_message(message: BaseMessage) -> BaseMessage:
    """``message`` itself when it can be encoded, else a copy (same id) without lone surrogates. NUL is
    kept: the checkpoint stores bytes, so it keeps the exact text (the transcript's columns cannot)."""
    fields = {name: getattr(message, name) for name in MESSAGE_TEXT_FIELDS if hasattr(message, name)}
    cleaned = {name: clean_text(value, keep_nul=True) for name, value in fields.items()}
    changed = {name: value for name, value in cleaned.items() if value != fields[name]}
    return message.model_copy(update=changed) if changed else message
