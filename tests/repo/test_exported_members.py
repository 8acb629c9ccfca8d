"""The public surface of each package is what its __all__ says, and all of it imports."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("package", ["context", "cache"])
def test_all_names_exist(package: str) -> None:
    module = importlib.import_module(f"chanctx.{package}")
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.{name} is in __all__ but missing"


def test_context_exports_the_models_other_layers_use() -> None:
    from chanctx import context

    for name in [
        "ChannelSnapshot",
        "ThreadContext",
        "Message",
        "Author",
        "MediaRef",
        "TokenCounter",
        "build_channel_snapshot",
        "build_thread_context",
        "default_counter",
        "wire_json",
    ]:
        assert name in context.__all__
    assert callable(importlib.import_module("chanctx.context.tokens").default_counter)
