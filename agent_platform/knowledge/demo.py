"""The demo knowledge base: short English and Chinese notes about the platform itself."""

from __future__ import annotations

DEMO_KB_SLUG = "platform-guide"
DEMO_KB_NAME = "Platform guide"
DEMO_KB_DESCRIPTION = "How this platform keeps long agent conversations inside the context budget."

DEMO_DOCUMENTS: list[tuple[str, str, str]] = [
    (
        "Context compression",
        "demo/context-compression.md",
        """# Context compression

Long agent conversations outgrow the model's context window. The platform compresses the context
automatically inside the agent loop, in two steps.

First, a free and deterministic step: large tool results are moved into files in the thread's
workdir, and the model sees a faithful preview plus the path of the saved file.

Only if that is not enough, older history is summarized by the model. The full text of the
summarized messages is saved to outputs/conversation_history/ so nothing is lost.

An idle thread can also be compressed by hand with the "compress context" button.
""",
    ),
    (
        "The token budget",
        "demo/token-budget.md",
        """# The token budget

Each agent has one context-pressure budget, summary_threshold, in K tokens (x1024). The effective
trigger is capped at 90% of the model's context window.

The budget counts the system prompt, the tool schemas and every message. Tokens are estimated with a
script-aware estimator, because characters/4 underestimates Chinese text and JSON tool output.

A tool result above summary_tool_result_token_limit estimated tokens is saved to a file and previewed.
""",
    ),
    (
        "Saved files and reading them back",
        "demo/saved-files.md",
        """# Saved files and reading them back

Every thread has a workdir. Large tool results are saved under outputs/large_tool_results/, named after
the tool and the first 16 hex digits of the SHA-256 of the content, so the original bytes can always be
recovered and verified.

The agent reads them back with read_file(path, offset, limit), a page of numbered lines at a time, and
lists the directory with ls. Paths are relative to the workdir; absolute paths and '..' are refused.
""",
    ),
    (
        "上下文压缩",
        "demo/context-compression.zh.md",
        """# 上下文压缩

长对话会超出模型的上下文窗口。平台在智能体循环中自动压缩上下文，分两步进行。

第一步是免费且确定性的：把过大的工具结果保存到线程工作目录中的文件里，模型只看到忠实的预览和文件路径。

只有当这还不够时，才会用模型对较早的历史进行摘要。被摘要的消息全文保存在 outputs/conversation_history/ 目录中，不会丢失任何内容。
""",
    ),
    (
        "令牌预算",
        "demo/token-budget.zh.md",
        """# 令牌预算

每个智能体只有一个上下文压力预算 summary_threshold，单位是千令牌（乘以 1024）。实际触发值不会超过模型上下文窗口的百分之九十。

预算统计系统提示词、工具定义和全部消息。令牌数由区分文字类型的估算器计算，因为按字符数除以四会严重低估中文文本。
""",
    ),
]
