from django.urls import path

from conversations import branch_views, share_views, sidebar_views, views

app_name = "conversations"

urlpatterns = [
    path("", views.thread_list, name="thread-list"),
    path("threads/new", views.thread_new, name="thread-new"),
    path("threads/<uuid:thread_id>/", views.thread_detail, name="thread-detail"),
    path(
        "threads/<uuid:thread_id>/branches/<int:message_id>/",
        branch_views.branch_detail,
        name="thread-branch",
    ),
    path(
        "threads/<uuid:thread_id>/branches/<int:message_id>/continue",
        branch_views.branch_continue_view,
        name="branch-continue",
    ),
    path(
        "threads/<uuid:thread_id>/branches/<int:message_id>/fork",
        branch_views.branch_fork_view,
        name="branch-fork",
    ),
    path("threads/<uuid:thread_id>/delete", views.thread_delete, name="thread-delete"),
    path("threads/<uuid:thread_id>/rename", views.thread_rename, name="thread-rename"),
    path("threads/<uuid:thread_id>/pin", sidebar_views.thread_pin, name="thread-pin"),
    path("threads/<uuid:thread_id>/archive", sidebar_views.thread_archive, name="thread-archive"),
    path("threads/<uuid:thread_id>/shares", share_views.thread_share_add, name="thread-share-add"),
    path(
        "threads/<uuid:thread_id>/shares/<int:user_id>/remove",
        share_views.thread_share_remove,
        name="thread-share-remove",
    ),
    path("threads/<uuid:thread_id>/link", share_views.thread_link_create, name="thread-link-create"),
    path("threads/<uuid:thread_id>/link/revoke", share_views.thread_link_revoke, name="thread-link-revoke"),
    path("s/<str:token>/", share_views.thread_link_read, name="thread-link-read"),
    path("bin/", sidebar_views.thread_bin, name="thread-bin"),
    path("bin/<uuid:thread_id>/restore", sidebar_views.thread_restore, name="thread-restore"),
    path("threads/<uuid:thread_id>/runs/current/cancel", views.run_cancel, name="run-cancel-current"),
    path("threads/<uuid:thread_id>/runs/<int:run_id>/cancel", views.run_cancel, name="run-cancel"),
    path("threads/<uuid:thread_id>/retry", views.turn_retry, name="turn-retry"),
    path("threads/<uuid:thread_id>/agent", views.agent_switch, name="agent-switch"),
    path("threads/<uuid:thread_id>/attachments/check", views.attachments_check, name="attachments-check"),
    path("threads/<uuid:thread_id>/messages", views.message_send, name="message-send"),
    path("threads/<uuid:thread_id>/answer", views.question_answer, name="question-answer"),
    path("threads/<uuid:thread_id>/fragments/messages", views.fragment_messages, name="fragment-messages"),
    path("threads/<uuid:thread_id>/fragments/state", views.fragment_state, name="fragment-state"),
    path("threads/<uuid:thread_id>/fragments/stream", views.fragment_stream, name="fragment-stream"),
    path("threads/<uuid:thread_id>/files/<path:path>", views.workdir_file, name="workdir-file"),
]
