"""The message renderer: CommonMark to HTML, fenced code highlighted, everything else sanitized."""

from __future__ import annotations

import re

import pytest

from conversations.markdown import markdown_to_html


def test_markdown_becomes_html():
    html = markdown_to_html("# Title\n\nSome **bold**, *italic* and `code`.\n\n- one\n- two")
    assert "<h1>Title</h1>" in html
    assert "<strong>bold</strong>" in html and "<em>italic</em>" in html and "<code>code</code>" in html
    assert "<li>one</li>" in html


def test_fenced_code_is_highlighted_by_language_and_unknown_languages_are_escaped():
    html = markdown_to_html("```python\ndef f(): return '<b>'\n```")
    assert '<pre class="code"><code class="language-python">' in html
    assert '<span class="tok-k">def</span>' in html
    assert "&lt;b&gt;" in html and "<b>" not in html
    plain = markdown_to_html("```nosuchlanguage\n<i>x</i>\n```")
    assert "<pre><code" in plain and "&lt;i&gt;x&lt;/i&gt;" in plain


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        '<a href="https://example.com" onclick="alert(1)">x</a>',
        "<iframe src=https://example.com></iframe>",
        '<div style="background:url(javascript:alert(1))">x</div>',
    ],
)
def test_raw_html_is_shown_as_text_never_as_markup(hostile):
    html = markdown_to_html(hostile)
    for tag in ("<script", "<img", "<iframe", "<div"):
        assert tag not in html
    assert not re.search(r"<[^>]*\s(on\w+|style)=", html)  # no handler or style on any element
    assert "&lt;" in html


@pytest.mark.parametrize(
    "link",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "[x](vbscript:msgbox(1))",
        "<javascript:alert(1)>",
    ],
)
def test_unsafe_link_schemes_never_become_links(link):
    html = markdown_to_html(link).lower()
    assert 'href="javascript' not in html and 'href="data' not in html and 'href="vbscript' not in html


def test_safe_links_keep_their_target_and_get_a_safe_rel():
    html = markdown_to_html("[docs](https://example.com/a?b=1) and <mailto:a@example.com>")
    assert 'href="https://example.com/a?b=1"' in html
    assert 'rel="noopener noreferrer nofollow"' in html
    assert 'href="mailto:a@example.com"' in html


def test_tables_and_line_breaks_of_chat_text():
    html = markdown_to_html("| a | b |\n|---|---|\n| 1 | 2 |\n\nfirst line\nsecond line")
    assert "<table>" in html and "<td>1</td>" in html
    assert "first line<br>" in html  # a single newline in a chat message is a line break
