"""pyrocketmq: a RocketMQ-compatible message queue in Python, run the Kubernetes way."""

__version__ = "0.1.0"
