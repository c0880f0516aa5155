"""Master/slave replication (RocketMQ 4.x HA protocol): ``frame`` and ``ack_table`` are pure,
``service`` holds the sockets (the master's HA server and the slave's HA client)."""
