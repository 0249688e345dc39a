"""Issue 31, item 4: the estimator against a real server's own count. llama.cpp serving SmolLM2-135M (the
``local-model`` extra) reports ``prompt_tokens`` for every request; its tokenizer is neither cl100k nor
Qwen, so this is the conservative profile (what an unknown model gets) and calibration meeting a tokenizer
they were not fitted on.

Per corpus (CHECK halves): each sample is sent as one user message (``max_tokens=1``) and the reported
prompt tokens are compared with our estimate of the same request, raw and calibrated (the readings
replayed in order through ``Calibration.observe``, as the platform applies them), and with chars/4.

    python -m bench.local_model
"""

from __future__ import annotations

import math

import httpx
import numpy as np
from langchain_core.messages import HumanMessage

from bench import corpora
from bench.common import markdown_table, pct
from context_engine.tokens.calibration import NEUTRAL
from context_engine.tokens.messages import messages_tokens, profile_for_model

SAMPLES_PER_CORPUS = 10  # the server evaluates prompts at ~60 tokens/s on this machine's 2 cores
CONTEXT_WINDOW = 8192
MAX_SAMPLE_CHARS = 4_000  # inside the window for most tokenizers; a refused sample is counted, not measured


def _stats(est: np.ndarray, true: np.ndarray) -> tuple[float, float, float]:
    rel = (est - true) / np.maximum(true, 1)
    return float(np.median(rel)), float(np.percentile(rel, 10)), float(np.percentile(rel, 90))


def _reported(client: httpx.Client, base_url: str, model: str, text: str) -> int | None:
    """The server's prompt tokens for ``text`` as one user message; None when it refuses it as too long."""
    response = client.post(
        f"{base_url}/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 1},
    )
    if response.status_code == 400 and "context_length_exceeded" in response.text:
        return None
    response.raise_for_status()
    return int(response.json()["usage"]["prompt_tokens"])


def run(samples_per_corpus: int = SAMPLES_PER_CORPUS) -> list[dict] | str:
    """The rows, or why there are none (the extra is not installed, or the server did not start)."""
    from agent_platform.local_model import MODEL_ALIAS, LocalModelUnavailable, missing_parts, start_server

    if missing := missing_parts():
        return f"skipped: the local-model extra is not installed ({', '.join(missing)} missing)"
    try:
        server = start_server(context_window=CONTEXT_WINDOW)
    except LocalModelUnavailable as exc:
        return f"skipped: {exc}"
    profile = profile_for_model(MODEL_ALIAS)
    rows = []
    calibration = NEUTRAL
    try:
        with httpx.Client(timeout=120.0) as client:
            for name in corpora.CORPORA:
                texts = [s.text[:MAX_SAMPLE_CHARS] for s in corpora.samples(name, corpora.CHECK)]
                texts = texts[:samples_per_corpus]
                if not texts:
                    continue
                true, raw, calibrated, measured, refused = [], [], [], [], 0
                for text in texts:
                    estimated = messages_tokens([HumanMessage(text)], profile)
                    reported = _reported(client, server.base_url, MODEL_ALIAS, text)
                    if reported is None:
                        refused += 1
                        continue
                    measured.append(text)
                    true.append(reported)
                    raw.append(estimated)
                    calibrated.append(calibration.corrected(estimated))
                    calibration = calibration.observe(estimated=estimated, reported=reported)
                if not true:
                    continue
                true_a = np.array(true, float)
                chars4 = np.array([math.ceil(len(t) / 4) for t in measured], float)
                rm, r10, r90 = _stats(np.array(raw, float), true_a)
                cm, c10, c90 = _stats(np.array(calibrated, float), true_a)
                qm, _, _ = _stats(chars4, true_a)
                rows.append(
                    {
                        "corpus": name,
                        "n": len(measured),
                        "refused": refused,
                        "profile": profile.name,
                        "raw_median": rm,
                        "raw_p10": r10,
                        "raw_p90": r90,
                        "calibrated_median": cm,
                        "calibrated_p10": c10,
                        "calibrated_p90": c90,
                        "chars4_median": qm,
                        "factor_after": calibration.factor,
                    }
                )
    finally:
        server.stop()
    return rows


def render(rows: list[dict] | str) -> str:
    intro = (
        "The estimator against a real server's own count: llama.cpp serving SmolLM2-135M (`make run-local`), "
        "`usage.prompt_tokens` of one user message per sample (CHECK halves, at most "
        f"{SAMPLES_PER_CORPUS} per corpus), relative error (estimate - reported) / reported. `raw`: the "
        "profile an unknown model gets; `calibrated`: the same estimate corrected by the calibration the "
        "readings so far built (corpora in order, as the platform applies readings); `factor_after`: the "
        "calibration factor after the corpus.\n\n"
    )
    if isinstance(rows, str):
        return intro + rows + "\n"
    formats = {c: pct for c in rows[0] if c.endswith(("median", "p10", "p90"))}
    formats["factor_after"] = lambda v: f"{v:.3f}"
    return intro + markdown_table(rows, list(rows[0]), formats)


if __name__ == "__main__":
    print(render(run()))
