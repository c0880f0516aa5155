"""Request processors: one module per request family, each mapping wire requests to store calls.

A processor never lets an exception reach the transport: bad input gets a response code and a
remark that says what is wrong; a bug gets ``SYSTEM_ERROR`` (the transport logs it).
"""
