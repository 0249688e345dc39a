"""The meter and the hint, in each state, from the one pressure function on the agent's current
configuration: below 85%, 85–99%, at or above 100%, anchored on reported usage or estimated, and a
retune in the admin seen at once by the page, /admin/pressure/ and bulk selection."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.urls import reverse

from compression.selectors import compression_candidates
from context_engine.policy.pressure import pressure_now
from conversations.models import Conversation
from tests.conversations.page_support import usage_at, write_token_usage

pytestmark = pytest.mark.django_db


def _state(client, thread) -> str:
    url = reverse("conversations:fragment-state", kwargs={"thread_id": thread.thread_id})
    html = client.get(url).content.decode()
    return html[html.index('id="state-panel"') : html.index("</section>")]


@pytest.mark.parametrize(
    ("ratio", "hint", "words"),
    [
        (0.5, "", None),
        (0.849, "", None),
        (0.85, "suggest", "You can compress it now, before the agent has to."),
        (0.99, "suggest", "You can compress it now, before the agent has to."),
        (1.0, "auto", "it will be compressed automatically when it is sent"),
        (1.4, "auto", "it will be compressed automatically when it is sent"),
    ],
)
def test_the_hint_follows_the_state(owner_client, thread, ratio, hint, words):
    write_token_usage(thread, usage_at(ratio))
    panel = _state(owner_client, thread)
    assert f'data-hint="{hint}"' in panel
    assert f"{ratio * 100:.1f}%" in panel
    if words is None:
        assert 'id="compression-hint"' not in panel and 'id="compress-button"' not in panel
    else:
        assert words in panel and 'id="compress-button"' in panel
        assert "Compress it before the next run" not in panel


def test_the_meter_is_anchored_on_reported_usage_plus_the_estimate_since(owner_client, thread):
    usage = {
        **usage_at(0.5),
        "llm_input_tokens": 50000,  # our estimate of the latest call's input
        "next_llm_input_tokens": 51200,  # ... plus its reply, estimated
        "estimated_next_llm_input_tokens": 51200,
        "last_call_usage": {"input_tokens": 56000, "output_tokens": 900},
    }
    write_token_usage(thread, usage)
    panel = _state(owner_client, thread)
    # 56,000 reported + 1,200 estimated since = 57,200 tokens, against the 102,400 trigger.
    assert 'data-basis="reported"' in panel and 'data-tokens="57200"' in panel
    assert "56K reported by the model provider for the latest call + 1.2K estimated since" in panel
    assert "55.9%" in panel


def test_without_a_provider_figure_the_meter_says_it_is_estimated(owner_client, thread):
    write_token_usage(thread, usage_at(0.5))
    panel = _state(owner_client, thread)
    assert 'data-basis="estimated"' in panel and "Estimated by the platform" in panel


def test_a_reported_figure_far_from_the_estimate_is_not_trusted():
    usage = {
        "llm_input_tokens": 50000,
        "estimated_next_llm_input_tokens": 51200,
        "next_llm_input_tokens": 51200,
        "last_call_usage": {"input_tokens": 900},  # a provider that misreports
    }
    figures = pressure_now(usage, trigger_tokens=102400, context_window=128000)
    assert figures["pressure_basis"] == "estimated" and figures["next_llm_input_tokens"] == 51200


def test_the_calibration_factor_scales_the_estimated_part_only():
    from context_engine.tokens.calibration import Calibration

    calibration = Calibration(factor=1.5, observations=3)
    usage = {"llm_input_tokens": 1000, "estimated_next_llm_input_tokens": 1100}
    figures = pressure_now(usage, trigger_tokens=10000, context_window=None, calibration=calibration)
    assert figures["next_llm_input_tokens"] == 1650
    reported = {**usage, "last_call_usage": {"input_tokens": 1400}}
    # 1,400 reported + (1,100 − 1,000) × 1.5 estimated since
    figures = pressure_now(reported, trigger_tokens=10000, context_window=None, calibration=calibration)
    assert figures["next_llm_input_tokens"] == 1550


def test_the_page_uses_the_current_trigger_not_the_recorded_one(owner_client, thread, agent):
    write_token_usage(thread, usage_at(0.5))  # recorded against 102,400
    agent.summary_threshold = 50  # now 51,200: the same 51,200-token request is at 100%
    agent.save()
    panel = _state(owner_client, thread)
    assert 'data-trigger="51200"' in panel and "100.0%" in panel and 'data-hint="auto"' in panel


@pytest.fixture
def tuner(client, django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("tuner", "t@example.com", "pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["change_agent", "view_agent", "tune_compression", "view_conversation"]
        )
    )
    client.force_login(user)
    return client


def _retune(client, agent, threshold_k: int):
    from django.forms.models import model_to_dict

    url = reverse("admin:agent_platform_agent_change", args=[agent.pk])
    data = {k: v for k, v in model_to_dict(agent).items() if v is not None}
    data.update(summary_threshold=threshold_k, tools=agent.tools, capabilities=agent.capabilities)
    return client.post(url, data)


def test_a_retune_in_the_admin_reaches_the_pressure_page_bulk_selection_and_open_pages(
    tuner, user, thread, agent, django_capture_on_commit_callbacks, settings
):
    from conversations.services.pressure import conversation_pressure_update

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    usage = usage_at(0.6)  # 61,440 tokens against 102,400
    write_token_usage(thread, usage)
    conversation_pressure_update(conversation_id=thread.pk, token_usage=usage)
    assert not compression_candidates(min_pressure=0.85).filter(pk=thread.pk).exists()

    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(f"agent.{agent.pk}", channel)
    with django_capture_on_commit_callbacks(execute=True):
        response = _retune(tuner, agent, 64)  # 65,536: the same request is now at 93.8%
    assert response.status_code == 302, response.content.decode()[:2000]

    thread.refresh_from_db()
    assert thread.trigger_tokens == 65536 and thread.pressure_ratio == pytest.approx(0.9375)
    assert compression_candidates(min_pressure=0.85).filter(pk=thread.pk).exists()
    page = tuner.get(reverse("admin-pressure")).content.decode()
    assert "93.8%" in page and "65.5K" in page
    event = async_to_sync(layer.receive)(channel)["event"]
    assert event == {"type": "state", "reason": "agent_retuned"}


def test_a_save_that_leaves_the_budget_alone_tells_no_one(
    tuner, thread, agent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        _retune(tuner, agent, agent.summary_threshold)
    assert not callbacks
    assert Conversation.objects.get(pk=thread.pk).trigger_tokens is None
