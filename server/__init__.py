"""What the broker and the name server share and clients never need: ACL enforcement (accounts,
the request-code → resource table, the plain_acl.yml watcher) and the policy for topic, group and
heartbeat configs. Stands on :mod:`pyrocketmq.remoting` (the wire); the servers stand on it."""
