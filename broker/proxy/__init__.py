"""The RocketMQ 5 gRPC endpoint (``apache.rocketmq.v2.MessagingService``) inside the broker: the
official 5.x clients send, receive and settle transactions here, backed by the broker's own store
and processors (RocketMQ 5's proxy in local mode)."""
