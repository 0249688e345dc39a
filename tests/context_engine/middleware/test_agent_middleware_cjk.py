"""A Chinese and an English conversation of the same real token size trigger compression at the same
point (SPEC 4): characters/4 would fire far too late on the Chinese one.

Real sizes are cl100k token counts measured offline with ``bench/tokenizers.py`` (``count_cl100k``)
over ``cjk_chats.thread(...)`` with ``cjk_chats.real_size`` (tiktoken is not a test dependency):
``REAL_*[i]`` is the real size of the first ``i + 1`` messages.
"""

from __future__ import annotations

import pytest

from context_engine.config import CompressionConfig
from context_engine.middleware import CompressionMiddleware
from context_engine.store import MemoryStore
from tests.context_engine.cjk_chats import thread
from tests.context_engine.fakes import Handler, ScriptedChatModel, make_request

REAL_ZH = [
    50,
    118,
    220,
    290,
    456,
    810,
    837,
    1166,
    1191,
    1211,
    1333,
    1394,
    1423,
    1443,
    1546,
    1622,
    1657,
    1674,
    1684,
    1702,
    1722,
    1731,
    1763,
    1886,
    1925,
    2023,
    2051,
    2184,
    2198,
    2330,
    2356,
    2450,
    2486,
    2655,
    2685,
    2715,
    2725,
    2816,
    2836,
    2891,
    2922,
    2979,
    2999,
    3020,
    3043,
    3098,
    3114,
    3198,
    3214,
    3304,
    3336,
    3442,
    3466,
    3660,
    3688,
    3755,
    3780,
    3825,
    3860,
    3893,
    3906,
    3942,
    3956,
    4001,
    4030,
    4109,
    4137,
    4247,
    4269,
    4369,
    4405,
    4548,
    4562,
    4592,
    4610,
    4627,
    4653,
    4683,
    4707,
    4734,
    4765,
    4801,
    5000,
    5424,
    5479,
    5874,
    5902,
    5962,
    6029,
    6070,
    6093,
    6342,
    6370,
    6624,
    6643,
    6849,
    6870,
    7174,
    7197,
    7260,
    7308,
    7374,
    7497,
    7637,
    7665,
    7691,
    7718,
    7739,
    7770,
    7797,
    7825,
    7849,
    7900,
    7925,
    7935,
    7964,
    7993,
    8013,
]
REAL_EN = [
    25,
    47,
    61,
    82,
    204,
    309,
    336,
    381,
    393,
    494,
    510,
    689,
    698,
    866,
    878,
    1062,
    1075,
    1265,
    1412,
    1538,
    1558,
    1685,
    1704,
    1863,
    1882,
    2026,
    2054,
    2075,
    2085,
    2110,
    2126,
    2144,
    2156,
    2179,
    2193,
    2211,
    2221,
    2242,
    2338,
    2912,
    2932,
    3119,
    3182,
    3448,
    3485,
    3821,
    3917,
    4491,
    4511,
    4698,
    4716,
    4731,
    4774,
    4826,
    4847,
    4862,
    4910,
    4966,
    5015,
    5304,
    5331,
    5412,
    5437,
    5531,
    5548,
    5674,
    5688,
    5796,
    5828,
    6014,
    6034,
    6166,
    6178,
    6312,
    6334,
    6356,
    6426,
    6480,
    6515,
    6535,
    6546,
    6560,
    6584,
    6602,
    6623,
    6640,
    6659,
    6678,
    6700,
    6716,
    6758,
    7127,
    7146,
    7401,
    7418,
    7671,
    7682,
    7938,
    8066,
]
TRIGGER = 6000


def _first_trigger(language: str, records: int) -> int:
    """Index of the first prefix of the thread at which the middleware starts compressing."""
    messages = thread(language, records=records)
    middleware = CompressionMiddleware(
        config=CompressionConfig(
            trigger_tokens=TRIGGER, keep_messages=1000, tool_result_token_limit=100_000, model_name="gpt-4"
        ),
        store=MemoryStore(),
        summary_model=ScriptedChatModel(),
    )
    for index in range(len(messages)):
        events: list[dict] = []
        middleware.wrap_model_call(make_request(messages[: index + 1], events=events, system=None), Handler())
        if events:
            return index
    raise AssertionError(f"{language} thread never reached the trigger")


@pytest.mark.shared_data
def test_chinese_and_english_threads_of_the_same_real_size_trigger_at_the_same_point():
    zh = REAL_ZH[_first_trigger("zh", 30)]
    en = REAL_EN[_first_trigger("en", 20)]
    assert abs(zh - en) <= 0.10 * max(zh, en), (zh, en)
    assert abs(zh - TRIGGER) <= 0.10 * TRIGGER and abs(en - TRIGGER) <= 0.10 * TRIGGER


@pytest.mark.shared_data
def test_characters_over_four_would_not_trigger_on_the_same_chinese_thread():
    messages = thread("zh", records=30)
    index = next(i for i, real in enumerate(REAL_ZH) if real >= TRIGGER)
    chars = sum(len(str(m.content)) for m in messages[: index + 1])
    assert chars / 4 < 0.75 * TRIGGER  # the naive count misses the budget by more than a quarter
