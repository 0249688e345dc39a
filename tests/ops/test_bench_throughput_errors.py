"""bench.throughput never throws its children's errors away (issue 41, item 3): a measurement that
fails prints why, the workers' logged errors are collected, and ``--starve N`` starts N busy processes
that really spin and are stopped after."""

from __future__ import annotations

import time

import pytest

from bench import throughput


def test_a_failed_measurement_prints_its_childs_errors(monkeypatch, capsys):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    with pytest.raises(SystemExit, match="failed"):
        throughput._measured(throughput.ROOT)
    assert "needs DATABASE_URL" in capsys.readouterr().err  # the child's own words, passed on


def test_the_workers_logged_errors_are_collected(tmp_path):
    env = {"WORKDIR_ROOT": str(tmp_path)}
    throughput._worker_log(env, 0).write_text(
        "[2026-12-06 04:00:00: WARNING/MainProcess] a warning\n"
        "[2026-12-06 04:00:01: ERROR/ForkPoolWorker-1] Task conversations.run_execute raised\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "psycopg.OperationalError: the connection is lost\n"
    )
    errors = throughput._worker_errors(env)
    assert errors == [
        "worker 0: [2026-12-06 04:00:01: ERROR/ForkPoolWorker-1] Task conversations.run_execute raised",
        "worker 0: psycopg.OperationalError: the connection is lost",
    ]


def test_starve_starts_busy_processes_and_stops_them():
    busy = throughput._starved(2)
    try:
        time.sleep(0.5)
        assert all(process.poll() is None for process in busy)
        assert all(throughput.cpu_seconds([process.pid]) > 0 for process in busy)  # spinning, not sleeping
    finally:
        throughput._stop_workers(busy)
    assert all(process.poll() is not None for process in busy)  # stopped and reaped


def test_compare_finds_the_project_package_of_old_and_new_layouts(tmp_path):
    """The ``--compare`` shim: a checkout from before the re-layering kept its settings and Celery app
    in ``agent_platform``; one since, in ``config``; anything else is refused with its reason."""
    assert throughput.project_package(throughput.ROOT) == "config"
    old = tmp_path / "old"
    (old / "agent_platform").mkdir(parents=True)
    (old / "agent_platform" / "settings.py").write_text("")
    assert throughput.project_package(old) == "agent_platform"
    with pytest.raises(SystemExit, match="neither"):
        throughput.project_package(tmp_path / "elsewhere")


def test_a_new_table_keeps_what_was_written_by_hand_below_it(tmp_path, monkeypatch):
    page = tmp_path / "throughput.md"
    page.write_text(f"# Run throughput\n\nold table\n\n{throughput.KEPT}\n\n## A starved machine\n\nrow\n")
    monkeypatch.setattr(throughput, "DOC", page)
    written = throughput.with_kept_sections("# Run throughput\n\nnew table\n")
    assert "new table" in written and "old table" not in written
    assert written.endswith(f"{throughput.KEPT}\n## A starved machine\n\nrow\n")
    page.write_text("# Run throughput\n\nold table\n")  # nothing kept: the table alone
    assert throughput.with_kept_sections("new\n") == "new\n"


def test_the_compressions_table_puts_refused_messages_beside_the_compressions():
    run = {
        "messages": 200, "refused": 3, "failed": 3, "missing": 0, "compressions": 50,
        "compression_ended": {"no_change": 48, "queued": 2}, "compressions_busy": 7, "wall_s": 93.4,
        "p95_s": 5.77, "cpu_per_message": 0.137, "load_start": 13.3, "load_end": 14.4,
    }  # fmt: skip
    row = throughput.compression_rows([("`abc`", run)]).splitlines()[-1]
    assert row == (
        "| `abc` | 200 | 3 | 3 (0) | 50 (48 no_change, 2 queued) | 7 | 93.4 s | 5.77 s | 0.137 | 13.3 → 14.4 |"
    )


def test_cpu_time_is_split_into_user_and_system():
    """A starved process is charged system time for the same work: the bench reports the share."""
    busy = throughput._starved(1)
    try:
        time.sleep(0.5)
        user, system = throughput._cpu_split([busy[0].pid])
        assert user > 0 and system >= 0
        assert throughput.cpu_seconds([busy[0].pid]) >= user + system - 0.02  # (it spins on)
    finally:
        throughput._stop_workers(busy)
