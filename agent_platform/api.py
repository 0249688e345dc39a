"""The platform's API operations: who is signed in, and the agents they can talk to."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Schema

from agent_platform.api_errors import error_responses
from agent_platform.selectors import agent_list_enabled


class MeOut(Schema):
    id: int
    username: str
    is_staff: bool


class AgentOut(Schema):
    slug: str
    name: str
    description: str
    capabilities: list[str]


router = Router(tags=["platform"])


@router.get("/me", response={200: MeOut, **error_responses()})
def me(request: HttpRequest):
    return request.user


@router.get("/agents", response={200: list[AgentOut], **error_responses()})
def agent_list(request: HttpRequest):
    return agent_list_enabled()
