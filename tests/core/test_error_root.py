"""Every error class core defines derives from the one root, `core.errors.SparkError`.

Walks every module under core/ so that a new `class FooError(Exception)` fails here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import core
from core.errors import SparkError

SKIP_PACKAGES = ("core.demo_project",)  # the demo's own code, written to the user's folder


def _core_modules():
    for info in pkgutil.walk_packages(core.__path__, "core."):
        if info.name.startswith(SKIP_PACKAGES):
            continue
        yield importlib.import_module(info.name)


def test_every_core_error_class_derives_from_spark_error():
    strays = []
    for module in _core_modules():
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and obj.__module__ == module.__name__ and not issubclass(obj, SparkError)):
                strays.append(f"{module.__name__}.{name}")
    assert strays == [], f"errors outside the SparkError root: {strays}"
