"""The chat fixtures of tests/conversations (the scripted model, the owner's client...)."""

from tests.conversations.conftest import (  # noqa: F401 - fixtures, registered by being here
    owner_client,
    scripted_model,
    seed_token_usage,
)
