"""The compiled part of the store (``broker/store/_native.c``). Everything else is in pyproject.toml.

``optional=True``: without a C compiler or Python's headers the install still succeeds, with a
warning from the build, and the store runs its pure-Python path (pyrocketmq.broker.store.native).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pyrocketmq.broker.store._native",
            ["broker/store/_native.c"],
            extra_compile_args=["-O2", "-std=c99", "-Wall"],
            optional=True,
        )
    ]
)
