from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path

from config import ops
from config.api import api, not_found


def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """Browsers ask for /favicon.ico on pages that name no icon; resolved per request, after
    collectstatic has written the manifest that names the hashed file."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


urlpatterns = [
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics, name="metrics"),
    path("admin/pressure/", include("conversations.admin_views")),
    path("admin/usage/", include("conversations.usage_admin")),
    path("admin/agents/", include("agent_platform.admin_views")),
    path("admin/agents/", include("conversations.admin_retune")),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("api/<path:rest>", not_found),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("compression.urls")),
    path("favicon.ico", favicon),
    path("", include("conversations.urls")),
]
