"""django-stubs' mypy plugin, with one crash worked around: its hook for ``typing.Annotated`` calls
``get_proper_type`` on the first argument, which fails (INTERNAL ERROR) when that is ``NotRequired[...]``
or ``Required[...]`` in a TypedDict, as in every LangGraph state schema (``context_engine.state``,
``langchain.agents.middleware.todo``). Such an argument is returned as mypy itself analyses it; everything
else goes to the plugin's own hook. Upstream: typeddjango/django-stubs#3658 (open for 5.2.9 and 6.x);
delete this module and name ``mypy_django_plugin.main`` in pyproject.toml once a release fixes it."""

from __future__ import annotations

from collections.abc import Callable

from mypy.plugin import AnalyzeTypeContext, Plugin
from mypy.types import RequiredType, Type
from mypy_django_plugin.main import NewSemanalDjangoPlugin


class DjangoPlugin(NewSemanalDjangoPlugin):
    def get_type_analyze_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        hook = super().get_type_analyze_hook(fullname)
        if hook is None or fullname not in ("typing.Annotated", "typing_extensions.Annotated"):
            return hook
        django_hook = hook

        def annotated(ctx: AnalyzeTypeContext) -> Type:
            if ctx.type.args:
                first = ctx.api.analyze_type(ctx.type.args[0])
                if isinstance(first, RequiredType):
                    return first  # what mypy itself makes of Annotated[X, ...]: X
            return django_hook(ctx)

        return annotated


def plugin(version: str) -> type[Plugin]:
    return DjangoPlugin
