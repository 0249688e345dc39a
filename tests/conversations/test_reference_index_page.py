"""The reference index on the thread page (issue 25): after a summary made through the API (the offline
model), the memory panel lists what the agent can look up under the summary, each pointer a link to the
file view at that line, and that line of the file view holds the identifier; the compression card's loss
report says how many identifiers the index carries."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.urls import reverse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent_platform.workdir import workdir_for
from compression.panels import memory_from
from context_engine.formats import REFERENCE_INDEX_HEADER, REFERENCE_INDEX_SEPARATOR
from context_engine.lines import split_lines
from conversations.services import NewMessage, message_append
from tests.compression._threads import seed_state
from tests.context_engine.chats import conversation_messages
from tests.conversations.test_context_panel import _detail, _section

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_four")]
_LINK = re.compile(r'<a class="mono index-pointer" href="([^"]+)#L(\d+)"[^>]*title="([^"]+)">([^<]+)</a>')


def _seed_with_many_identifiers(thread) -> None:
    """Four tool rounds whose results name more URLs and sizes than a summary keeps (the offline model's
    keeps 40 references and no sizes), in the checkpoint and the transcript."""
    messages = conversation_messages(4)
    for n, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            links = " ".join(f"https://docs.example.org/{n}/page-{k}?v=2 is {k + 2} MB" for k in range(15))
            messages[n] = message.model_copy(update={"content": f"{links} {message.content}"})
    seed_state(thread, messages)
    for message in messages:
        if isinstance(message, ToolMessage):
            role, extra = "tool", {"tool_call_id": message.tool_call_id, "tool_name": message.name}
        elif isinstance(message, AIMessage):
            role, extra = "assistant", {"tool_calls": message.tool_calls}
        else:
            role, extra = "user", {}
        message_append(
            conversation=thread,
            message=NewMessage(role=role, content=message.content, lc_message_id=message.id, **extra),
        )


def test_the_memory_panel_links_each_index_entry_to_its_line(owner_client, thread):
    _seed_with_many_identifiers(thread)
    response = owner_client.post(f"/api/threads/{thread.thread_id}/compress?wait=true")
    assert response.status_code == 200, response.content
    page = owner_client.get(_detail(thread)).content.decode()
    panel = _section(page, "memory-panel")
    assert 'id="memory-index"' in panel and "What the agent can look up:" in panel
    assert "&lt;reference_index&gt;" not in panel.split('id="memory-index"')[0]  # not inside the summary
    links = _LINK.findall(panel)
    assert links
    workdir = workdir_for(thread)
    for href, line, title, text in links:
        path = title.rsplit(":L", 1)[0]
        assert title == f"{path}:L{line}" and text == f"{path.rsplit('/', 1)[-1]}:L{line}"
        assert href == reverse(
            "conversations:workdir-file", kwargs={"thread_id": thread.thread_id, "path": path}
        )
        row = split_lines(workdir.read_text(path))[int(line) - 1]
        value = re.search(
            rf'<span class="value mono">([^<]+)</span><a class="mono index-pointer" href="{re.escape(href)}#L{line}"',
            panel,
        )
        assert value and html_lib.unescape(value.group(1)) in row
        # the file view's anchor for that line holds the same text
        view = owner_client.get(href).content.decode()
        anchored = re.search(
            rf'<span class="file-line" id="L{line}" data-line="{line}">(.*?)</span>', view, re.S
        )
        assert anchored and html_lib.unescape(anchored.group(1)).rstrip("\n") == row
    card = _section(page, "compression-status")
    assert re.search(r"The reference index after the summary carries \d+ of them", card)


def test_a_file_view_numbers_lines_as_read_file_does(owner_client, thread):
    workdir_for(thread).write_text("notes/a.md", "one\ntwo\r\nthree\u2028still three\nfour")
    url = reverse("conversations:workdir-file", kwargs={"thread_id": thread.thread_id, "path": "notes/a.md"})
    view = owner_client.get(url).content.decode()
    assert '<span class="file-line" id="L3" data-line="3">three\u2028still three\n</span>' in view
    assert '<span class="file-line" id="L4" data-line="4">four</span></pre>' in view


def test_the_panel_cuts_the_summary_at_the_last_index_header_only():
    quoted = f"## SESSION INTENT\nwork; the model quoted{REFERENCE_INDEX_SEPARATOR}{REFERENCE_INDEX_HEADER}\n- X L1"
    index = f"{REFERENCE_INDEX_HEADER}\n3 more not listed here\n</reference_index>"
    event = {
        "cutoff_index": 1,
        "summary_message": HumanMessage(quoted + REFERENCE_INDEX_SEPARATOR + index),
        "file_path": "outputs/conversation_history/s.md",
        "reference_index": {"entries": [], "omitted": 3, "ranges": [], "tokens": 20},
    }
    memory = memory_from(
        {"messages": [HumanMessage("a"), HumanMessage("b")], "_summarization_event": event},
        summary_tokens=50,
        folded_last_seq=1,
    )
    assert memory.summary_text == quoted and memory.index == () and memory.index_omitted == 3
