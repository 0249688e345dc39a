"""Chat messages as safe HTML: CommonMark (markdown-it-py), fenced code highlighted by Pygments, then
an allow-list sanitizer (nh3) so no raw HTML, event handler or ``javascript:`` link ever reaches a page.
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "span", "a", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "ol": {"start"},
}
URL_SCHEMES = {"http", "https", "mailto"}
CODE_LANGUAGE_MAX_CHARS = 40
RENDER_CACHE_SIZE = 1024
_FORMATTER = HtmlFormatter(nowrap=True, classprefix="tok-")


def _highlight(code: str, language: str, _attrs: object) -> str:
    """A fenced block as ``<pre class="code">``: highlighted when the language is known, else escaped."""
    language = (language or "").strip()[:CODE_LANGUAGE_MAX_CHARS]
    try:
        lexer = get_lexer_by_name(language) if language else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""  # markdown-it escapes the code itself
    body = highlight(code, lexer, _FORMATTER)
    return f'<pre class="code"><code class="language-{nh3.clean_text(lexer.aliases[0])}">{body}</code></pre>'


# html=False: raw HTML in a message is shown as text, never parsed.
_PARSER = MarkdownIt("commonmark", {"html": False, "highlight": _highlight, "breaks": True}).enable(
    ["table", "strikethrough"]
)


@lru_cache(maxsize=RENDER_CACHE_SIZE)
def markdown_to_html(text: str) -> str:
    """Sanitized HTML of a Markdown message (memoized: a page renders the same messages again)."""
    html = _PARSER.render(text or "")
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )
