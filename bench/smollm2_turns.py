"""Issue 37, item 6 at length: the 40-turn SmolLM2 test's conversation over 200 turns, measured instead
of asserted. llama.cpp serves the packaged SmolLM2-135M at a 2,048-token window (the ``local-model``
extra) as agent and summarizer; each user message (log lines or this repository's source) goes through
``/api/threads/{id}/messages`` and the run is awaited through ``GET .../state``, in a child process with
its own Django on a throwaway SQLite database. A proxy in front of the server records every request.

Rows: turns answered; the extractive-fallback rate (applied summaries labelled extractive); summary calls
paid (summary requests the server answered); requests over the window by our raw estimate; where the
folded identifiers went (in view / one read / unreachable, summed over the summaries' loss reports).

    python -m bench.smollm2_turns [--turns N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

from bench.common import ROOT, markdown_table

TURNS = 200
CONTEXT_WINDOW = 2048
MAX_REPLY_TOKENS = 160  # as the test's server: short replies (the platform names no max_tokens)
KEEP_MESSAGES = 2
SUMMARY_THRESHOLD_K = 1  # T = 1,024 tokens
TURN_TIMEOUT_SECONDS = 900.0


def _child_env(tmp: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=f"sqlite:///{tmp}/db.sqlite3",
        RUN_EXECUTION="inprocess",
        WORKDIR_ROOT=os.path.join(tmp, "workdirs"),
        CHECKPOINT_SQLITE_PATH=os.path.join(tmp, "checkpoints.sqlite3"),
        MEDIA_ROOT=os.path.join(tmp, "media"),
        THROTTLE_SEND_PER_MINUTE="0",  # one user sending as fast as the model answers
        THROTTLE_SEND_CONCURRENT="0",
        LOG_LEVEL="ERROR",
    )
    os.environ.pop("REDIS_URL", None)


def _api_thread(proxy: Any, window: int) -> Any:
    """A user, the local agent behind ``proxy`` and a new thread, driven by a logged-in test client."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from agent_platform.local_model import MODEL_ALIAS, seed_local_agent
    from context_engine.tokens.messages import profile_for_model
    from tests.support.smollm2_turns import ApiThread, thread_open

    agent = seed_local_agent(base_url=proxy.base_url, context_window=window)
    agent.tools = []
    agent.summary_keep_messages = KEEP_MESSAGES
    agent.summary_threshold = SUMMARY_THRESHOLD_K
    agent.save()
    client = Client()
    client.force_login(get_user_model().objects.create_user("bench-smollm2", password="unused-pw-1"))
    return ApiThread(
        client=client,
        headers={},
        thread_id=thread_open(client, {}, agent_slug=agent.slug),
        proxy=proxy,
        profile=profile_for_model(MODEL_ALIAS),
        window=window,
        timeout=TURN_TIMEOUT_SECONDS,
    )


def _figures(turns: list[Any], folded: Any, window: int) -> dict[str, Any]:
    sent = [s for t in turns for s in t.sent]
    memories = [t.memory for t in turns]
    return {
        "turns": len(turns),
        "answered": sum(1 for t in turns if t.status == "succeeded" and t.answer.strip()),
        "first_failed": next((t.number for t in turns if t.status != "succeeded"), None),
        "first_error": next((t.error for t in turns if t.status != "succeeded"), ""),
        "summaries": folded.summaries,
        "extractive": folded.extractive,
        "summary_calls_paid": sum(1 for s in sent if s.summary and s.status == 200),
        "requests": len(sent),
        "over_window": sum(1 for s in sent if s.estimate > window or s.status == 400),
        "largest_request": max((s.estimate for s in sent), default=0),
        "template_turns": memories.count("template"),
        "invalid_memory_turns": memories.count("invalid"),
        "in_view": folded.in_view,
        "one_read": folded.one_read,
        "two_reads": folded.two_reads,
        "unreachable": folded.unreachable,
        "median_turn_s": statistics.median(t.seconds for t in turns) if turns else 0.0,
        "total_s": sum(t.seconds for t in turns),
    }


def _child(turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-smollm2-") as tmp:
        _child_env(tmp)
        import django

        django.setup()
        from django.core.management import call_command

        from agent_platform.local_model import start_server
        from agent_platform.runtime.checkpointer import checkpointer_close
        from tests.support.smollm2_turns import RecordingProxy, take_turn, thread_folded, user_messages

        call_command("migrate", verbosity=0, interactive=False)
        server = start_server(context_window=CONTEXT_WINDOW, max_reply_tokens=MAX_REPLY_TOKENS)
        proxy = RecordingProxy(server.base_url).start()
        try:
            thread = _api_thread(proxy, server.context_window)
            done = []
            for number, content in enumerate(user_messages(turns), start=1):
                done.append(take_turn(thread, number, content))
                print(f"turn {number}: {done[-1].status} in {done[-1].seconds:.1f} s", file=sys.stderr)
            return _figures(done, thread_folded(thread.thread_id), server.context_window)
        finally:
            proxy.stop()
            server.stop()
            checkpointer_close()


def run(turns: int = TURNS) -> dict[str, Any] | str:
    """The figures, or why there are none (the extra is not installed, or the child failed)."""
    from agent_platform.local_model import missing_parts

    if missing := missing_parts():
        return f"skipped: the local-model extra is not installed ({', '.join(missing)} missing)"
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    done = subprocess.run(
        [sys.executable, "-m", "bench.smollm2_turns", "--child", "--turns", str(turns)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return f"failed: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def _share(part: int | None, whole: int) -> str:
    if not whole:
        return "0 / 0 (no summary applied)"
    if part is None:
        return f"n/a: no record of the {whole} summaries is labelled extractive or model (issue 37, item 1)"
    return f"{part} / {whole} ({part / whole:.0%})"


def render(figures: dict[str, Any] | str) -> str:
    intro = (
        "The packaged SmolLM2-135M on llama.cpp at a 2,048-token window as agent and summarizer, "
        f"{MAX_REPLY_TOKENS}-token replies, T = {SUMMARY_THRESHOLD_K * 1024:,} tokens, "
        f"{KEEP_MESSAGES} messages kept; each turn one user message (log lines or this repository's "
        "source) through the HTTP API, awaited through the state endpoint. The 40-turn test "
        "(`tests/processes/agent_platform/test_local_model_turns.py`) asserts what this reports.\n\n"
    )
    if isinstance(figures, str):
        return intro + figures + "\n"
    f = figures
    failed = f"; first failure at turn {f['first_failed']}: {f['first_error']}" if f["first_failed"] else ""
    rows = [
        {"measure": "turns answered", "value": f"{f['answered']} / {f['turns']}{failed}"},
        {"measure": "extractive-fallback rate", "value": _share(f["extractive"], f["summaries"])},
        {"measure": "summary calls paid", "value": f"{f['summary_calls_paid']} ({f['summaries']} applied)"},
        {
            "measure": "requests over the window by our raw estimate",
            "value": f"{f['over_window']} / {f['requests']} (largest {f['largest_request']:,} tokens)",
        },
        {
            "measure": "memory the template echoed / invalid (turns)",
            "value": f"{f['template_turns']} / {f['invalid_memory_turns']}",
        },
        {
            "measure": "identifiers in view / one read / unreachable (two reads)",
            "value": f"{f['in_view']} / {f['one_read']} / {f['unreachable']} ({f['two_reads']})",
        },
        {
            "measure": "seconds per turn, median (total)",
            "value": f"{f['median_turn_s']:.1f} ({f['total_s']:.0f} s)",
        },
    ]
    return intro + markdown_table(rows, ["measure", "value"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--child", action="store_true", help="run here (Django set up in this process)")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.turns)))
        return
    print(render(run(args.turns)))


if __name__ == "__main__":
    main()
