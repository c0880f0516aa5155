"""The compiled parts: the store's put path (``broker/store/_native.c``) and the remoting frame
decoder (``remoting/_frames.c``). Everything else is in pyproject.toml.

``optional=True``: without a C compiler or Python's headers the install still succeeds, with a
warning from the build, and each runs its pure-Python path (pyrocketmq.broker.store.native,
pyrocketmq.remoting.command).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pyrocketmq.broker.store._native",
            ["broker/store/_native.c"],
            extra_compile_args=["-O2", "-std=c99", "-Wall"],
            optional=True,
        ),
        Extension(
            "pyrocketmq.remoting._frames",
            ["remoting/_frames.c"],
            extra_compile_args=["-O2", "-std=c99", "-Wall"],
            optional=True,
        ),
    ]
)
