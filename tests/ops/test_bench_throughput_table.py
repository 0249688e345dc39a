"""bench.throughput's table: each code's row is the median of its own runs (never another code's), with
sums of messages and failures, the widest load and the spread of messages/s; every run is listed in the
order it ran. Checked on generated runs, so a row that copied one run, or mixed two codes, fails."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

from bench.throughput import MEDIAN_FIGURES, _median_row, _tabulated, markdown

figure = st.floats(min_value=0.01, max_value=100, allow_nan=False)
run = st.fixed_dictionaries(
    {
        "messages": st.integers(1, 200),
        "failed": st.integers(0, 5),
        "wall_s": figure,
        **{key: figure for key in MEDIAN_FIGURES},
        "load_start": st.floats(0, 20),
        "load_end": st.floats(0, 20),
        "cores": st.just(2),
    }
)


@given(st.lists(run, min_size=1, max_size=7))
def test_a_row_is_the_median_of_its_runs(runs):
    row = _median_row(runs)
    for key in MEDIAN_FIGURES:
        assert row[key] == statistics.median(r[key] for r in runs)
    assert row["messages"] == sum(r["messages"] for r in runs)
    assert row["failed"] == sum(r["failed"] for r in runs)
    assert row["load_start"] == min(r["load_start"] for r in runs)
    assert row["load_end"] == max(r["load_end"] for r in runs)
    assert row["rate_min"] <= row["messages_per_s"] <= row["rate_max"]
    assert row["runs"] == len(runs)


@given(st.lists(run, min_size=2, max_size=4), st.lists(run, min_size=2, max_size=4))
def test_the_table_shows_each_codes_median_and_every_run(before, after):
    # Alternating as the bench runs them; both checkouts at one commit: the same label.
    ran = [(place, r) for pair in zip(before, after, strict=False) for place, r in enumerate(pair)]
    ran += [(0, r) for r in before[len(after) :]] + [(1, r) for r in after[len(before) :]]
    rows, runs = _tabulated(["`same`", "`same`"], ran)
    assert rows == [("`same`", _median_row(before)), ("`same`", _median_row(after))]
    table = markdown(rows, runs)
    lines = table.splitlines()
    medians = [line for line in lines if line.startswith("| `same` |")]
    assert len(medians) == 2
    for line, (_label, row) in zip(medians, rows, strict=True):
        assert line.startswith(f"| `same` | {row['runs']} | {row['messages']} |")
        assert f"| {row['messages_per_s']:.2f} ({row['rate_min']:.2f}–{row['rate_max']:.2f}) |" in line
        assert f"| {row['cpu_per_message']:.3f} |" in line
    listed = [line for line in lines if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert len(listed) == len(runs)
    for number, (line, (_place, r)) in enumerate(zip(listed, ran, strict=True), 1):
        assert line.startswith(f"| {number} | `same` | {r['messages']} |")
        assert f"| {r['messages_per_s']:.2f} |" in line
    ratio = rows[1][1]["cpu_per_message"] / rows[0][1]["cpu_per_message"]
    assert f"CPU-s per message ×{ratio:.2f}" in table
