from django.urls import path

from compression import views

app_name = "compression"

urlpatterns = [
    path(
        "threads/<uuid:thread_id>/fragments/compression",
        views.fragment_compression,
        name="fragment-compression",
    ),
    path(
        "threads/<uuid:thread_id>/fragments/compress-preview",
        views.fragment_compress_preview,
        name="fragment-compress-preview",
    ),
]
