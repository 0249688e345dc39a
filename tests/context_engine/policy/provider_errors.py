"""Real error bodies of model providers (status, JSON body), as their OpenAI-compatible endpoints answer:
the overflows each provider sends when the prompt is too long, and look-alikes that are not overflows.
Shared by the classification tests and the through-the-stub recovery test."""

from __future__ import annotations

from typing import Any

# name -> (HTTP status, body). Wordings as the providers send them (figures vary per request).
OVERFLOW_BODIES: dict[str, tuple[int, Any]] = {
    # Gemini's OpenAI-compatible endpoint answers a JSON *list* of error objects.
    "gemini": (
        400,
        [
            {
                "error": {
                    "code": 400,
                    "message": "The input token count (1054016) exceeds the maximum number of tokens allowed "
                    "(1048576).",
                    "status": "INVALID_ARGUMENT",
                }
            }
        ],
    ),
    "anthropic-compat": (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 208310 tokens > 200000 maximum",
            },
            "request_id": "req_011CVQe1dLrGNMJyE1ghG1av",
        },
    ),
    "anthropic-compat-with-max-tokens": (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000, "
                "decrease input length or `max_tokens` and try again",
            },
        },
    ),
    # xAI: the error is a plain string next to a gRPC-style code.
    "xai": (
        400,
        {
            "code": "Client specified an invalid argument",
            "error": "This model's maximum prompt length is 131072 but the request contains 136973 tokens.",
        },
    ),
    "mistral": (
        400,
        {
            "object": "error",
            "message": "Prompt contains 40205 tokens and 0 draft tokens, too large for model with 32768 "
            "maximum context length",
            "type": "invalid_request_message_error",
            "param": None,
            "code": "3051",
        },
    ),
    "moonshot": (
        400,
        {
            "error": {
                "message": "Invalid request: Your request exceeded model token limit: 262144 (requested: 269030)",
                "type": "invalid_request_error",
            }
        },
    ),
    "github-copilot": (
        400,
        {
            "error": {
                "message": "prompt token count of 138898 exceeds the limit of 64000",
                "code": "model_max_prompt_tokens_exceeded",
            }
        },
    ),
    # Copilot through some proxies: the same message with every other field empty.
    "github-copilot-bare": (
        400,
        {
            "error": {
                "message": "prompt token count of 65446 exceeds the limit of 64000",
                "param": "",
                "code": "",
                "type": "",
            }
        },
    ),
    "azure-openai": (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, your messages resulted "
                "in 192041 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    "azure-openai-gpt-5": (
        400,
        {
            "error": {
                "message": "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in "
                "289650 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    # MiniMax (its Anthropic- and OpenAI-compatible endpoints): 2013 is its code for invalid parameters,
    # not a size (MiniMax-AI/MiniMax-M2#119, agentscope-ai/QwenPaw#1273).
    "minimax": (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "invalid params, context window exceeds limit (2013)",
            },
            "request_id": "05ffff21147fd872da78cd17c03f0785",
        },
    ),
    # Hugging Face TGI (and servers built on it) answer 422.
    "tgi": (
        422,
        {
            "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 "
            "`inputs` tokens and 512 `max_new_tokens`",
            "error_type": "validation",
        },
    ),
}

NOT_OVERFLOW_BODIES: dict[str, tuple[int, Any]] = {
    "openai-max-tokens": (
        400,
        {
            "error": {
                "message": "max_tokens is too large: 20000. This model supports at most 16384 completion tokens, "
                "whereas you provided 20000.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "invalid_value",
            }
        },
    ),
    "anthropic-max-tokens": (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for "
                "claude-sonnet-4-5-20250929",
            },
        },
    ),
    "openai-tpm-rate-limit": (
        429,
        {
            "error": {
                "message": "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit "
                "30000, Used 25000, Requested 8000. Please try again in 6s.",
                "type": "tokens",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
    ),
    # Groq answers a request larger than the tier's TPM with 413 and a rate-limit code.
    "groq-tpm-413": (
        413,
        {
            "error": {
                "message": "Request too large for model `llama-3.1-8b-instant` in organization `org_01hsj` service "
                "tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 12000, please reduce your "
                "message size and try again.",
                "type": "tokens",
                "code": "rate_limit_exceeded",
            }
        },
    ),
    "bedrock-throttling": (
        429,
        {"error": {"message": "Too many tokens, please wait before trying again.", "type": "throttling"}},
    ),
    "openai-auth": (
        401,
        {
            "error": {
                "message": "Incorrect API key provided: sk-abc***1234. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        },
    ),
    "gemini-bad-temperature": (
        400,
        [
            {
                "error": {
                    "code": 400,
                    "message": "Invalid value at 'generation_config.temperature' (TYPE_FLOAT), 3.5",
                    "status": "INVALID_ARGUMENT",
                }
            }
        ],
    ),
    "openai-tool-schema": (
        400,
        {
            "error": {
                "message": "Invalid schema for function 'lookup_order': In context=('properties', 'id'), "
                "'additionalProperties' is required to be supplied and to be false.",
                "type": "invalid_request_error",
                "code": "invalid_function_parameters",
            }
        },
    ),
}
