import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_platform.tools.web_search import NOT_CONFIGURED, TavilyProvider, build_web_search_tool

# A real Tavily answer, shortened (shared/data/pydantic_ai_cassettes/web_search/test_tavily__test_basic_search.json).
TAVILY_RESPONSE = {
    "answer": None,
    "follow_up_questions": None,
    "images": [],
    "query": "What is Pydantic AI?",
    "request_id": "3b2f7385-b01d-479e-9825-1ce0f8c59b93",
    "response_time": 0.89,
    "results": [
        {
            "content": "Pydantic AI is a Python agent framework designed to help you quickly, confidently, "
            "and painlessly build production grade applications and workflows with",
            "raw_content": None,
            "score": 0.99997807,
            "title": "Pydantic AI - Pydantic AI",
            "url": "https://ai.pydantic.dev/",
        },
        {
            "content": "Pydantic AI lets you integrate large language models like GPT-5 **directly into your "
            "Python applications**.",
            "raw_content": None,
            "score": 0.9999398,
            "title": "Build Production-Ready AI Agents in Python with Pydantic AI",
            "url": "https://www.youtube.com/watch?v=-WB0T0XmDrY",
            "published_date": "2025-03-01",
        },
    ],
}


class FakeTavily:
    def __init__(self, status=200, body=TAVILY_RESPONSE):
        self.requests = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers["Content-Length"])
                fake.requests.append(
                    {
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": json.loads(self.rfile.read(length)),
                    }
                )
                payload = json.dumps(body).encode() if isinstance(body, dict) else body
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_web_search_without_a_provider_returns_a_clear_error_result(settings):
    settings.WEB_SEARCH_BASE_URL = ""
    settings.WEB_SEARCH_API_KEY = ""
    result = json.loads(build_web_search_tool().invoke({"query": "django"}))
    assert result == {"query": "django", "error": NOT_CONFIGURED, "results": []}
    assert "WEB_SEARCH_BASE_URL" in result["error"] and "WEB_SEARCH_API_KEY" in result["error"]


def test_web_search_against_a_tavily_compatible_server_returns_the_documented_shape(settings):
    with FakeTavily() as server:
        settings.WEB_SEARCH_BASE_URL = server.url + "/"
        settings.WEB_SEARCH_API_KEY = "tvly-test-key"
        result = json.loads(build_web_search_tool().invoke({"query": "What is Pydantic AI?"}))
    request = server.requests[0]
    assert request["path"] == "/search"
    assert request["headers"]["Authorization"] == "Bearer tvly-test-key"
    assert request["body"]["query"] == "What is Pydantic AI?"
    assert request["body"]["api_key"] == "tvly-test-key" and request["body"]["max_results"] == 5
    assert set(result) == {"query", "response_time", "results"}
    assert result["query"] == "What is Pydantic AI?"
    assert result["results"][0] == {
        "title": "Pydantic AI - Pydantic AI",
        "url": "https://ai.pydantic.dev/",
        "site_name": "ai.pydantic.dev",
        "publish_time": None,
        "score": 0.99997807,
        "content": TAVILY_RESPONSE["results"][0]["content"],
    }
    assert result["results"][1]["publish_time"] == "2025-03-01"
    assert result["results"][1]["site_name"] == "www.youtube.com"


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [(401, {"detail": "bad key"}, "HTTP 401"), (200, b"<html>", "not JSON")],
)
def test_a_failing_provider_is_an_error_result_not_an_exception(status, body, message):
    with FakeTavily(status=status, body=body) as server:
        tool = build_web_search_tool(TavilyProvider(base_url=server.url, api_key="k"))
        result = json.loads(tool.invoke({"query": "x"}))
    assert result["results"] == [] and message in result["error"]


def test_an_unreachable_provider_is_an_error_result():
    tool = build_web_search_tool(TavilyProvider(base_url="http://127.0.0.1:9", api_key="k", timeout=2))
    result = json.loads(tool.invoke({"query": "x"}))
    assert result["results"] == [] and result["error"].startswith("web_search failed:")
