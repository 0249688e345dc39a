"""The offline deterministic chat model (SPEC 2.1): honest, rule-routed to tools, extractive summaries.

It exists so that everything except language quality works without a network: tool routing,
answers quoted from tool results, and summaries under the five required headings.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from django.utils import translation
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from agent_platform.model_catalog import OFFLINE_MODEL_NAME
from agent_platform.runtime.offline_tool_words import clip as _clip
from agent_platform.runtime.offline_tool_words import describe_tool_result
from agent_platform.runtime.offline_words import offline_reply, offline_tool_answer
from context_engine.formats import (
    RECEIPT_TRUNCATED_TEMPLATE,
)
from context_engine.summary import extractive
from context_engine.summary.validation import DEFAULT_HEADINGS
from context_engine.tokens.messages import estimate_messages, estimate_text, profile_for_model

SUMMARY_HEADINGS = DEFAULT_HEADINGS

# (tool, pattern) in priority order; the first rule whose tool is bound wins.
_ROUTES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ask_user", re.compile(r"\bask me\b|问我", re.I)),
    ("task", re.compile(r"\bdelegate\b|\bsub-?agent\b|子代理", re.I)),
    (
        "read_file",
        re.compile(r"\bread\s+(?:the\s+)?(?:file\s+)?(?P<path>[\w./-]+\.\w+|[\w.-]+/[\w./-]+)", re.I),
    ),
    ("ls", re.compile(r"\blist (?:the )?files\b|\bls\b|列出文件", re.I)),
    ("web_search", re.compile(r"\bweb\b|\binternet\b|\bnews\b|网上|网络|新闻", re.I)),
    ("query_kb", re.compile(r"\bsearch\b|\bfind\b|\bknowledge\b|\bkb\b|文档|知识库|查找|搜索", re.I)),
)
_TRUNCATED_PREFIX = RECEIPT_TRUNCATED_TEMPLATE.split("{", 1)[0]
_MESSAGES_BLOCK = re.compile(r"<messages>\s*(.*?)\s*</messages>", re.S)


class OfflineChatModel(BaseChatModel):
    """Deterministic, network-free chat model. ``bind_tools`` returns a copy routed to those tools."""

    model_name: str = OFFLINE_MODEL_NAME
    tool_names: tuple[str, ...] = ()
    tool_schemas: dict[str, dict] = {}
    tool_definitions: tuple[dict, ...] = ()  # as sent to a provider; counted in the reported usage
    language: str = "en"  # of the page the message came from (``offline_words``)

    @property
    def _llm_type(self) -> str:
        return "offline-extractive"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> OfflineChatModel:
        schemas, definitions = {}, []
        for tool in tools:
            definition = convert_to_openai_tool(tool)
            definitions.append(definition)
            spec = definition["function"]
            schemas[spec["name"]] = spec.get("parameters") or {}
        return self.model_copy(
            update={
                "tool_names": tuple(schemas),
                "tool_schemas": schemas,
                "tool_definitions": tuple(definitions),
            }
        )

    # --- the one pure core ---------------------------------------------------------------------

    def reply(self, messages: Sequence[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else HumanMessage("")
        if isinstance(last, ToolMessage):
            return AIMessage(content=self._answer_from_tools(messages))
        text = last.text if isinstance(last.content, (str, list)) else str(last.content)
        if _MESSAGES_BLOCK.search(text) and "## SESSION INTENT" in text:
            return AIMessage(content=extractive_summary(text))
        text, attached = _words_and_attachments(last)
        call = self._route(text, position=len(messages))
        if call is not None:
            return AIMessage(content="", tool_calls=[call])
        said = _clip(text, 300) if text else ""
        return AIMessage(
            content=offline_reply(self.language, said=said, attached=attached, tool_names=self.tool_names)
        )

    def _route(self, text: str, *, position: int) -> dict | None:
        for tool, pattern in _ROUTES:
            if tool not in self.tool_names:
                continue
            match = pattern.search(text)
            if match is None:
                continue
            # Deterministic, and unique within a thread: the position of the request is part of it.
            digest = hashlib.sha256(f"{position}\x1f{text}".encode()).hexdigest()[:24]
            return {"name": tool, "args": self._arguments(tool, text, match), "id": f"call_{digest}"}
        return None

    def _arguments(self, tool: str, text: str, match: re.Match[str]) -> dict[str, Any]:
        params = (self.tool_schemas.get(tool) or {}).get("properties", {})
        if tool == "read_file":
            return {"path": match.group("path")}
        if tool == "ls":
            return {"path": "."} if "path" in (self.tool_schemas.get(tool) or {}).get("required", []) else {}
        if tool == "ask_user":
            return {"question": f"{_clip(text, 200)} — what would you like me to do?"}
        if tool == "task":
            return {"description": text.strip()}
        key = "query" if "query" in params or not params else next(iter(params))
        return {key: text.strip()}

    def _answer_from_tools(self, messages: Sequence[BaseMessage]) -> str:
        results: list[ToolMessage] = []
        for message in reversed(messages):
            if not isinstance(message, ToolMessage):
                break
            results.insert(0, message)
        calls = _tool_call_args(messages)
        with translation.override(self.language or "en"):
            sentences = [
                describe_tool_result(r.name, r.text, calls.get(r.tool_call_id) or {}) for r in results
            ]
        return offline_tool_answer(self.language, sentences)

    # --- BaseChatModel hooks -------------------------------------------------------------------

    def _usage(self, messages: Sequence[BaseMessage], reply: AIMessage) -> dict[str, int]:
        # This model's tokenizer is the platform's own estimator: it reports the whole request
        # (system prompt, tool schemas, messages), as a provider's prompt-token count does.
        profile = profile_for_model(self.model_name)
        prompt = estimate_messages(messages, tools=self.tool_definitions, profile=profile)
        output = estimate_text(reply.text, profile) + 4 * len(reply.tool_calls)
        return {"input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self.reply(messages)
        reply.usage_metadata = self._usage(messages, reply)
        reply.response_metadata = {"model_name": self.model_name, "finish_reason": "stop"}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self.reply(messages)
        for word in re.findall(r"\S+\s*|\s+", reply.text):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word))
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk
        for index, call in enumerate(reply.tool_calls):
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {
                            "name": call["name"],
                            "args": json.dumps(call["args"]),
                            "id": call["id"],
                            "index": index,
                        }
                    ],
                )
            )
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=self._usage(messages, reply),
                response_metadata={"model_name": self.model_name, "finish_reason": "stop"},
                chunk_position="last",
            )
        )


def _tool_call_args(messages: Sequence[BaseMessage]) -> dict[str, dict[str, Any]]:
    """The arguments of every tool call in ``messages``, by call id."""
    args: dict[str, dict[str, Any]] = {}
    for message in messages:
        for call in getattr(message, "tool_calls", None) or ():
            if call.get("id"):
                args[call["id"]] = call.get("args") or {}
    return args


def extractive_summary(prompt: str) -> str:
    """A summary under the five required headings, built only from text found in the ``<messages>`` block
    (the engine's extractive method, ``context_engine.summary.extractive``)."""
    block = _MESSAGES_BLOCK.search(prompt)
    body = block.group(1) if block else prompt
    return extractive.extractive_summary(extractive.transcript_entries(body))


# How an attachment block starts (context_engine.formats), and where its file name is.
_ATTACHMENT_NAME = re.compile(
    r'^(?:<attachment name="([^"]*)"|\[Attachment saved\]\nName: (.*)|Attached image (.*?) \()'
)


def _words_and_attachments(message: BaseMessage) -> tuple[str, list[str]]:
    """The user's own words, and the names of the files attached to the message."""
    if isinstance(message.content, str):
        return message.content, []
    words, names = [], []
    for block in message.content:
        text = block if isinstance(block, str) else block.get("text") if isinstance(block, dict) else None
        if not isinstance(text, str):
            continue
        match = _ATTACHMENT_NAME.match(text)
        if match:
            names.append(next(group for group in match.groups() if group is not None))
        else:
            words.append(text)
    return "\n".join(words).strip(), names
