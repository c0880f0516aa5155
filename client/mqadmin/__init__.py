"""``pyrocketmq admin``: Apache mqadmin's commands over :class:`~pyrocketmq.client.admin.Admin`, one
module per kind of thing they act on; :mod:`.registry` holds the table of every verb."""
