"""Benchmarks of pyrocketmq side by side with Apache RocketMQ 4.9 on the same machine (not tests).

``python -m bench`` (see ``bench/README.md``) starts each broker in turn on loopback, drives both
with the same Java load generators (Apache RocketMQ's own ``rocketmq-example`` benchmark Producer
and Consumer, plus the small programs in ``bench/java/`` for what those do not measure), samples the
broker processes from ``/proc`` and prints one table of figures and ratios ours/theirs.

Modules: :mod:`.clusters` (start/stop both brokers with comparable settings, sample CPU and RSS),
:mod:`.scenarios` (the workloads and the parsing of the generators' output), :mod:`.report` (table
and JSON), :mod:`.cli` (the command). The Apache jars, the JVM launching and the process helpers are
the conformance harness's (``tests/conformance``, ``tests/helpers``), imported, not copied.
"""
