"""The offline model's own words to the user, in the language of the page the message was sent from
(``AgentRun.language``): English, or any language the project's catalog translates (简体中文)."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils import translation
from django.utils.translation import gettext as _


def offline_reply(language: str, *, said: str, attached: Sequence[str], tool_names: Sequence[str]) -> str:
    """The direct reply: the notice, what the user said and attached, and how to reach the tools."""
    with translation.override(language or "en"):
        parts = [notice()]
        if said:
            parts.append(_("You said: “%(text)s”.") % {"text": said})
        if attached:
            parts.append(
                _("You attached %(files)s; they are saved under uploads/.") % {"files": ", ".join(attached)}
            )
        if tool_names:
            parts.append(
                _(
                    "Mention searching, the web, listing or reading files, or “ask me” to use my tools: %(tools)s."
                )
                % {"tools": ", ".join(tool_names)}
            )
        else:
            parts.append(_("No tools are available to me here."))
        return " ".join(parts)


def offline_tool_answer(language: str, sentences: Sequence[str]) -> str:
    """The answer after tool calls: the notice, then what the tools returned (``offline_tool_words``)."""
    with translation.override(language or "en"):
        return " ".join([notice(), *sentences])


def notice() -> str:
    return _("(Offline model: no language model is configured, so I route to tools by simple rules.)")
