import pytest
from agent_platform.runtime.graph import state_repository_for
from conversations.services import message_intake
pytestmark = pytest.mark.django_db

def _say(thread, user, content, capture):
    with capture(execute=True):
        return message_intake(thread_id=thread.thread_id, user=user, content=content)

def test_scratch(thread, user, django_capture_on_commit_callbacks):
    a = _say(thread, user, "hello one", django_capture_on_commit_callbacks)
    b = _say(thread, user, "hello two", django_capture_on_commit_callbacks)
    repo = state_repository_for(thread)
    for s in repo.graph.get_state_history(repo.config):
        print(repo.version_of(s)[-6:], repo.version_of_parent(s)[-6:], s.next, s.metadata.get("source"), s.metadata.get("step"), [m.id for m in s.values.get("messages", [])])
    print("fork", repo.fork_before(b.message.lc_message_id))
    print([m.id for m in repo.get_values()["messages"]], repo.snapshot().next)
    print("fork", repo.fork_before(a.message.lc_message_id))
    print(repo.get_values(), repo.snapshot().next)
    c = _say(thread, user, "hello three", django_capture_on_commit_callbacks)
    c.run.refresh_from_db(); print(c.run.status, c.run.error_detail)
    print([(m.type, m.content[:30]) for m in repo.get_values()["messages"]])
