"""Generated protobuf modules of the RocketMQ 5 gRPC API (scripts/gen-proxy-pb)."""
