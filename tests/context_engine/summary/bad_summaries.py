"""What summary models, and the proxies and libraries in front of them, have answered instead of a
summary: each was once stored as a thread's memory. Shared by the engine's and the API's tests."""

from __future__ import annotations

from tests.context_engine.chats import SUMMARY
from tests.context_engine.summary.test_error_texts import ERROR_TEXTS

CLOUDFLARE_PAGE = (
    '<!DOCTYPE html>\n<html lang="en-US"><head><title>Just a moment...</title><meta http-equiv="refresh" '
    'content="35"></head><body><div class="main-wrapper"><h1>example.com</h1><p>Checking if the site '
    "connection is secure</p></div></body></html>"
)
NGINX_PAGE = (
    "<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n<body>\r\n<center><h1>504 Gateway "
    "Time-out</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>"
)
JSON_BODY = '{"detail": "Upstream request timed out", "status": 504, "trace_id": "7f3a9c"}'
REFUSAL = "I'm sorry, but I can't help with summarizing this conversation."
CUT_OFF = SUMMARY[: SUMMARY.index("## ARTIFACTS AND REFERENCES") + len("## ARTIFACTS AND")]

# name -> the text a summary call answered with.
BAD_SUMMARIES: dict[str, str] = {
    "html_error_page": CLOUDFLARE_PAGE,
    "nginx_error_page": NGINX_PAGE,
    "json_error_body": JSON_BODY,
    "refusal": REFUSAL,
    "cut_off_mid_way": CUT_OFF,
    **{f"error_text_{shape}_{index}": text for index, (shape, text) in enumerate(ERROR_TEXTS)},
}
