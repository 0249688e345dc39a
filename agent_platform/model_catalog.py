"""Known models: context windows (max input tokens) for models whose admin field is left empty, looked up
by ``model_key`` (so ``openai:gpt-4o`` and Ollama's ``qwen2.5:7b`` find their family)."""

from __future__ import annotations

from context_engine.tokens.messages import model_key

OFFLINE_MODEL_NAME = "offline-extractive"

# Longest prefix wins. Figures are the providers' published input windows.
KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    OFFLINE_MODEL_NAME: 131_072,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4.5": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 272_000,
    "gpt-oss": 131_072,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "qwen-max": 32_768,
    "qwen-plus": 131_072,
    "qwen-turbo": 1_000_000,
    "qwen2.5": 32_768,
    "qwen3": 131_072,
    "deepseek-chat": 65_536,
    "deepseek-reasoner": 65_536,
    "deepseek-r1": 131_072,  # the open weights and their distills (Ollama's deepseek-r1:*)
    "llama-3.1": 131_072,
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "mistral-large": 131_072,
}


def context_window_for(model_name: str) -> int | None:
    """The window of a known model, named as the estimator's profiles are (``model_key``)."""
    name = model_key(model_name)
    best = None
    for prefix, window in KNOWN_CONTEXT_WINDOWS.items():
        if name.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, window)
    return best[1] if best else None
