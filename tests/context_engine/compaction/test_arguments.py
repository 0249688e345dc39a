"""View-only truncation of long write_file/edit_file arguments."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage

from context_engine.compaction.arguments import truncate_tool_call_args
from context_engine.compaction.tool_results import compact_messages

LONG = "def main():\n" + "    print('x')\n" * 400
MARK = "...(argument truncated for context view)"


def _write_call(name: str = "write_file") -> AIMessage:
    args = {"file_path": "/src/app.py", "content": LONG}
    return AIMessage(
        "",
        id="a1",
        tool_calls=[{"name": name, "args": args, "id": "call_1"}],
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ]
        },
    )


def test_long_write_file_args_are_truncated_in_tool_calls_and_raw_arguments():
    message = _write_call()
    truncated, count = truncate_tool_call_args(message, max_length=2000)
    assert count == 1
    args = truncated.tool_calls[0]["args"]
    assert args["content"] == LONG[:20] + MARK and args["file_path"] == "/src/app.py"
    raw = json.loads(truncated.additional_kwargs["tool_calls"][0]["function"]["arguments"])
    assert raw["content"].endswith(MARK) and raw["file_path"] == "/src/app.py"
    # the original message is intact
    assert message.tool_calls[0]["args"]["content"] == LONG
    assert json.loads(message.additional_kwargs["tool_calls"][0]["function"]["arguments"])["content"] == LONG


def test_unparseable_raw_arguments_are_truncated_as_a_string():
    message = _write_call()
    message.additional_kwargs["tool_calls"][0]["function"]["arguments"] = "{" + LONG
    truncated, _ = truncate_tool_call_args(message, max_length=2000)
    assert truncated.additional_kwargs["tool_calls"][0]["function"]["arguments"] == ("{" + LONG)[:20] + MARK


def test_edit_file_nested_arguments_are_truncated():
    message = AIMessage(
        "", tool_calls=[{"name": "edit_file", "args": {"edits": [{"old": LONG, "new": "y"}]}, "id": "c"}]
    )
    truncated, count = truncate_tool_call_args(message, max_length=100)
    assert count == 1
    assert truncated.tool_calls[0]["args"]["edits"] == [{"old": LONG[:20] + MARK, "new": "y"}]


def test_other_tools_and_short_arguments_are_left_alone():
    other = _write_call("shell")
    assert truncate_tool_call_args(other, max_length=2000) == (other, 0)
    short = AIMessage("", tool_calls=[{"name": "write_file", "args": {"content": "hi"}, "id": "c"}])
    assert truncate_tool_call_args(short, max_length=2000) == (short, 0)


def test_anthropic_tool_use_blocks_are_truncated_too():
    message = AIMessage(
        [{"type": "tool_use", "id": "c", "name": "write_file", "input": {"content": LONG}}],
        tool_calls=[{"name": "write_file", "args": {"content": LONG}, "id": "c"}],
    )
    truncated, _ = truncate_tool_call_args(message, max_length=2000)
    assert truncated.content[0]["input"]["content"] == LONG[:20] + MARK


def test_compaction_counts_truncated_calls_and_keeps_ids(config, store):
    result = compact_messages([_write_call()], config=config, store=store)
    assert result.truncated_tool_calls == 1 and result.changed
    assert result.messages[0].id == "a1" and result.messages[0].tool_calls[0]["id"] == "call_1"
    assert store.files == {}


def test_a_raw_call_whose_function_is_not_an_object_is_left_alone():
    # A provider may put anything there; compaction must not fail the turn on it.
    message = AIMessage("", additional_kwargs={"tool_calls": [{"id": "c", "function": "write_file"}]})
    truncated, count = truncate_tool_call_args(message, max_length=10)
    assert count == 0 and truncated.additional_kwargs == message.additional_kwargs
