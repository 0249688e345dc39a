"""The provider chat model: LangChain's ``ChatOpenAI``, its messages sent past the OpenAI SDK's request
transform (imported only by runs that use an endpoint: langchain_openai is slow to import)."""

from __future__ import annotations

from typing import Any

from langchain_openai import ChatOpenAI


class ProviderChatModel(ChatOpenAI):
    """``ChatOpenAI`` with the same request body, built for less.

    The SDK walks every request through its typed transform, each message against each of the six
    message types: 5 ms for a 20-message thread, 50 for 200, per model call. For Chat Completions
    parameters that walk renames and re-encodes nothing (no field there has an alias or a format), so
    the messages LangChain built travel as ``extra_body``, which the SDK merges into the JSON as is,
    in the same place. A structured-output call (``response_format``) goes the SDK's own way.
    """

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        messages = payload.get("messages")
        if not isinstance(messages, list) or "response_format" in payload:
            return payload
        payload["extra_body"] = {**(payload.get("extra_body") or {}), "messages": messages}
        payload["messages"] = []  # required by the SDK's signature; replaced by extra_body's
        return payload
