"""The controller of controller mode: who masters each broker group, at which epoch, with which
in-sync replicas (``state``, pure), served over remoting by the name server or on its own
(``service``)."""
