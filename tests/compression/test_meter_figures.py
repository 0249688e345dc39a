"""A manual compression's preview, its result and an undo all start from the figure the thread page's
meter shows (``compression.selectors.meter_tokens``: the one pressure function on the agent's current
configuration, anchored on reported usage when there is some), so the preview, the card and the meter
never disagree about the request's size before."""

from __future__ import annotations

import pytest

from context_engine.policy.pressure import pressure_now
from context_engine.tokens.calibration import NEUTRAL, Calibration
from tests.compression._threads import repository_for, seed_state
from tests.context_engine.chats import conversation_messages
from tests.conversations.page_support import usage_at

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_four")]


def _meter(agent, values) -> int:
    return pressure_now(
        values.get("token_usage"),
        trigger_tokens=agent.effective_trigger,
        context_window=agent.resolved_context_window,
    )["next_llm_input_tokens"]


def test_preview_apply_and_undo_report_the_meters_figure_as_before(client, user, agent, thread):
    # The provider reported 3,000 prompt tokens for the latest call, which we had estimated at 2,500:
    # the meter says 3,000 + what was added since, not our estimate.
    seed_state(
        thread,
        conversation_messages(6),
        token_usage={
            **usage_at(0.2),
            "llm_input_tokens": 2500,
            "next_llm_input_tokens": 2600,
            "estimated_next_llm_input_tokens": 2600,
            "last_call_usage": {"input_tokens": 3000, "output_tokens": 50},
        },
    )
    meter = _meter(agent, repository_for(thread).get_values())
    assert meter == 3100  # anchored: 3,000 reported + 100 estimated since

    client.force_login(user)
    base = f"/api/threads/{thread.thread_id}/compress"
    preview = client.post(f"{base}/preview").json()
    assert preview["before_tokens"] == meter

    applied = client.post(f"{base}?wait=true&preview_id={preview['preview_id']}").json()
    assert applied["status"] == "completed" and applied["before_tokens"] == meter
    # After the summary the meter is our estimate of the new request: the card's "after".
    after_meter = _meter(agent, repository_for(thread).get_values())
    assert applied["after_tokens"] == after_meter < meter

    undone = client.post(f"{base}/undo").json()
    assert undone["before_tokens"] == after_meter
    assert undone["after_tokens"] == _meter(agent, repository_for(thread).get_values())


def test_without_a_measurement_the_figures_are_the_estimate_with_the_overhead(client, user, thread):
    seed_state(thread, conversation_messages(6))
    client.force_login(user)
    preview = client.post(f"/api/threads/{thread.thread_id}/compress/preview").json()
    applied = client.post(
        f"/api/threads/{thread.thread_id}/compress?wait=true&preview_id={preview['preview_id']}"
    ).json()
    assert applied["before_tokens"] == preview["before_tokens"] > 0


def test_the_meter_uses_the_calibration_its_measurement_was_made_with():
    usage = {**usage_at(0.5), "calibration": {"factor": 1.2, "observations": 7}}
    figures = pressure_now(usage, trigger_tokens=102_400, context_window=128_000)
    assert figures["next_llm_input_tokens"] == round(51_200 * 1.2)
    assert figures["calibration"] == {"factor": 1.2, "observations": 7}


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        ({"factor": 1.2, "observations": 3}, Calibration(1.2, 3)),
        ({"factor": 9.0, "observations": 3}, Calibration(2.0, 3)),  # clamped like a learned factor
        ({"factor": "1.2", "observations": 3}, NEUTRAL),
        ({"factor": True, "observations": 3}, NEUTRAL),
        ({"factor": 1.1}, NEUTRAL),
        (None, NEUTRAL),
        ("junk", NEUTRAL),
    ],
)
def test_a_recorded_calibration_is_read_back_or_neutral(recorded, expected):
    assert Calibration.from_dict(recorded) == expected
