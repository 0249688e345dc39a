"""The ``web_search`` tool: a provider interface, a Tavily-compatible HTTP provider, and error results.

A missing configuration or a failing provider is a tool RESULT with an ``error`` key, never an
exception, so the model can tell the user instead of the run failing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from langchain_core.tools import BaseTool, tool

WEB_SEARCH_MAX_RESULTS = 5
WEB_SEARCH_TIMEOUT = 20.0  # seconds; connecting gets at most 5
NOT_CONFIGURED = "web_search is not configured: set WEB_SEARCH_BASE_URL and WEB_SEARCH_API_KEY"


class WebSearchError(Exception):
    """The provider could not answer; the message is safe to show the model."""


class WebSearchProvider(Protocol):
    def search(self, query: str, *, max_results: int) -> list[dict]:
        """Results as ``{"title", "url", "site_name", "publish_time", "score", "content"}``."""


@dataclass
class TavilyProvider:
    """Any server speaking Tavily's ``POST /search`` protocol."""

    base_url: str
    api_key: str
    timeout: float = WEB_SEARCH_TIMEOUT

    def search(self, query: str, *, max_results: int) -> list[dict]:
        url = self.base_url.rstrip("/") + "/search"
        body = {"query": query, "max_results": max_results, "api_key": self.api_key}
        headers = {"Authorization": f"Bearer {self.api_key}"}
        try:
            response = httpx.post(
                url,
                json=body,
                headers=headers,
                timeout=httpx.Timeout(self.timeout, connect=min(5.0, self.timeout)),
            )
        except httpx.TimeoutException as exc:
            raise WebSearchError("the search provider timed out") from exc
        except httpx.HTTPError as exc:
            raise WebSearchError(f"could not reach the search provider ({type(exc).__name__})") from exc
        if response.status_code != 200:
            raise WebSearchError(f"the search provider answered HTTP {response.status_code}")
        try:
            results = response.json().get("results") or []
        except (ValueError, AttributeError) as exc:
            raise WebSearchError("the search provider sent a response that is not JSON") from exc
        return [_tavily_record(item) for item in results if isinstance(item, dict)][:max_results]


def _tavily_record(item: dict) -> dict:
    url = str(item.get("url") or "")
    return {
        "title": item.get("title") or "",
        "url": url,
        "site_name": item.get("site_name") or urlsplit(url).hostname or "",
        "publish_time": item.get("published_date") or item.get("publish_time"),
        "score": item.get("score"),
        "content": item.get("content") or "",
    }


def configured_provider() -> WebSearchProvider | None:
    if settings.WEB_SEARCH_BASE_URL and settings.WEB_SEARCH_API_KEY:
        return TavilyProvider(base_url=settings.WEB_SEARCH_BASE_URL, api_key=settings.WEB_SEARCH_API_KEY)
    return None


def web_search_result(
    *, query: str, provider: WebSearchProvider | None, max_results: int = WEB_SEARCH_MAX_RESULTS
) -> dict:
    if provider is None:
        return {"query": query, "error": NOT_CONFIGURED, "results": []}
    if not (query or "").strip():
        return {"query": query, "error": "The query is empty.", "results": []}
    started = time.perf_counter()
    try:
        results = provider.search(query, max_results=max_results)
    except WebSearchError as exc:
        return {"query": query, "error": f"web_search failed: {exc}", "results": []}
    return {"query": query, "response_time": round(time.perf_counter() - started, 3), "results": results}


def build_web_search_tool(provider: WebSearchProvider | None = None) -> BaseTool:
    provider = provider or configured_provider()

    @tool("web_search", parse_docstring=True)
    def web_search(query: str) -> str:
        """Search the web; returns JSON results with title, url, site name, publish time and content.

        Args:
            query: The search query.
        """
        return json.dumps(web_search_result(query=query, provider=provider), ensure_ascii=False)

    return web_search
