"""Fit the estimator's per-class weights on the FIT halves of the real corpora (SPEC §4).

For each reference tokenizer (cl100k, Qwen) it solves a non-negative least-squares problem on the
*relative* error: every FIT sample is a row ``features / true_tokens`` with target 1, and every
corpus gets the same total weight (so the 3.9 MB aider history does not drown the 59 web results).
It prints the fitted coefficients, ready to paste into ``context_engine/tokens/profiles.py``, and the
FIT-half residuals per corpus (the CHECK half is only touched by ``estimator_accuracy.py``).

    python -m bench.fit_estimator
"""

from __future__ import annotations

import numpy as np

from bench import corpora, tokenizers
from context_engine.tokens.messages import FEATURES, text_features

# Features whose weight is fixed rather than fitted (too rare in the corpora to fit reliably).
FIXED: dict[str, dict[str, float]] = {
    "cl100k": {"other": 1.0, "astral": 2.0},
    "qwen": {"other": 0.8, "astral": 2.0},
    "max": {"other": 1.0, "astral": 2.0},
}


def _count_max(text: str) -> int:
    return max(tokenizers.count_cl100k(text), tokenizers.count_qwen(text))


# Fit targets: each family tokenizer, and the per-sample max of both (for the conservative profile).
TARGETS = {
    "cl100k": tokenizers.count_cl100k,
    "qwen": tokenizers.count_qwen,
    "max": _count_max,
}


def _nnls(a: np.ndarray, b: np.ndarray, iters: int = 5000) -> np.ndarray:
    """min ||a w - b||^2 subject to w >= 0, by projected coordinate descent on the normal equations."""
    h = a.T @ a
    g0 = a.T @ b
    w = np.zeros(a.shape[1])
    diag = np.maximum(np.diag(h), 1e-12)
    for _ in range(iters):
        prev = w.copy()
        for j in range(len(w)):
            grad = h[j] @ w - g0[j]
            w[j] = max(0.0, w[j] - grad / diag[j])
        if np.max(np.abs(w - prev)) < 1e-9:
            break
    return w


def dataset(half: str, reference: str, corpus_names=None):
    """Feature matrix, true token counts and corpus labels of one half."""
    count = TARGETS[reference]
    rows, truth, labels = [], [], []
    for name in corpus_names or corpora.CORPORA:
        for s in corpora.samples(name, half):
            feats = text_features(s.text)
            rows.append([feats[k] for k in FEATURES])
            truth.append(count(s.text))
            labels.append(name)
    return np.array(rows, float), np.array(truth, float), np.array(labels)


def fit(reference: str, x: np.ndarray, y: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    fixed = FIXED.get(reference, {})
    free = [i for i, k in enumerate(FEATURES) if k not in fixed]
    offset = sum(x[:, FEATURES.index(k)] * v for k, v in fixed.items()) if fixed else np.zeros(len(y))
    keep = y > 0
    # Equal total weight per corpus; each row in relative terms (divide by the true count).
    weights = np.zeros(len(y))
    for name in np.unique(labels[keep]):
        mask = keep & (labels == name)
        weights[mask] = 1.0 / np.sqrt(mask.sum())
    scale = weights / np.where(keep, y, 1.0)
    a = x[:, free] * scale[:, None]
    b = (y - offset) * scale
    w = _nnls(a[keep], b[keep])
    coef = dict.fromkeys(FEATURES, 0.0)
    coef.update(fixed)
    for i, j in enumerate(free):
        coef[FEATURES[j]] = float(w[i])
    return coef


def residuals(coef: dict[str, float], x, y, labels) -> list[dict]:
    est = x @ np.array([coef[k] for k in FEATURES])
    rel = (np.ceil(est) - y) / np.maximum(y, 1)
    out = []
    for name in dict.fromkeys(labels):
        r = rel[labels == name]
        out.append(
            {
                "corpus": name,
                "n": len(r),
                "median": float(np.median(r)),
                "p10": float(np.percentile(r, 10)),
                "p90": float(np.percentile(r, 90)),
            }
        )
    return out


def run() -> list[dict]:
    rows = []
    for reference in TARGETS:
        x, y, labels = dataset(corpora.FIT, reference)
        coef = fit(reference, x, y, labels)
        rows.append({"reference": reference, **{k: round(v, 4) for k, v in coef.items()}})
        print(f"\n# {reference}: fitted on FIT halves ({len(y)} samples)")
        print("    " + ", ".join(f"{k}={v:.4f}" for k, v in coef.items()))
        for r in residuals(coef, x, y, labels):
            print(
                f"    {r['corpus']:14s} n={r['n']:5d} median={r['median']:+.3f} "
                f"p10={r['p10']:+.3f} p90={r['p90']:+.3f}"
            )
    print("\n# paste into context_engine/tokens/profiles.py:\n_FITTED: dict[str, dict[str, float]] = {")
    for row in rows:
        print(f'    "{row["reference"]}": {{')
        for i in range(0, len(FEATURES), 4):
            print("        " + " ".join(f'"{k}": {row[k]},' for k in FEATURES[i : i + 4]))
        print("    },")
    print("}")
    return rows


if __name__ == "__main__":
    run()
