"""ACL 2.0's settings (Apache RocketMQ 5.3's keys), read alike by the broker (``broker.conf``) and the
name server (``namesrv.conf``). Pure: no I/O.

::

    authenticationEnabled=true             every request signed by an enabled user with its password
    authorizationEnabled=true              what a request does allowed by its user's ACL
    initAuthenticationUser={"username":"root","password":"..."}          a super user made at start
    innerClientAuthenticationCredentials={"accessKey":"inner","secretKey":"..."}
                                           the super user the server's own clients sign with (a
                                           broker registering with the name servers), made likewise
    authenticationWhitelist=34,11          request codes nobody needs to sign
    authorizationWhitelist=                request codes no ACL is asked about
    authenticationCertificateCaPath=/etc/pyrocketmq/tls/clients-ca.crt
                                           a TLS client certificate these CAs issued authenticates
                                           the user its common name names (requests without an
                                           AccessKey; see :mod:`.cert_users`)

A bad value is refused at load (:class:`~pyrocketmq.remoting.properties.ConfigError` naming the key).

>>> s = read_auth_settings(lambda k, d: {"innerClientAuthenticationCredentials":
...     '{"accessKey": "inner", "secretKey": "inner-secret"}'}.get(k, d), lambda k, d: d)
>>> s.inner_account
('inner', 'inner-secret')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from pyrocketmq.remoting.properties import ConfigError

from .acl2 import AuthError, User, UserType, user_from_info
from .cert_users import CA_PATH_KEY, CertUsers

INIT_USER = "initAuthenticationUser"
INNER_CREDENTIALS = "innerClientAuthenticationCredentials"
SECRET_AUTH_KEYS = frozenset({INIT_USER, INNER_CREDENTIALS})
"""Keys holding passwords: never shown."""
_SHAPES = {INIT_USER: ("username", "password"), INNER_CREDENTIALS: ("accessKey", "secretKey")}


@dataclass(frozen=True, slots=True)
class AuthSettings:
    """ACL 2.0 (users and ACLs, :mod:`pyrocketmq.server.acl2`), Apache 5.3's keys."""

    authentication_enabled: bool = False
    """``authenticationEnabled``: every request must be signed by an enabled user with its password."""
    authorization_enabled: bool = False
    """``authorizationEnabled``: what a request does must be allowed by its user's ACL (super users
    may do anything)."""
    init_user: str = field(default="", repr=False)
    """``initAuthenticationUser``: ``{"username": ..., "password": ...}``, a super user created at
    start when it does not exist."""
    inner_credentials: str = field(default="", repr=False)
    """``innerClientAuthenticationCredentials``: ``{"accessKey": ..., "secretKey": ...}``, the super
    user the server's own clients sign with, created likewise."""
    authentication_whitelist: frozenset[int] = frozenset()
    """``authenticationWhitelist``: request codes (comma-separated) nobody needs to sign."""
    authorization_whitelist: frozenset[int] = frozenset()
    """``authorizationWhitelist``: request codes no ACL is asked about."""
    certificate_ca_path: str = ""
    """``authenticationCertificateCaPath``: PEM CA certificates whose client certificates authenticate
    the users their common names name (a request that carries no AccessKey, on a TLS connection
    that presented such a certificate)."""

    @property
    def enabled(self) -> bool:
        return self.authentication_enabled or self.authorization_enabled

    def super_users(self) -> list[tuple[str, User]]:
        """The configured super users, each with the key that names it; ConfigError for a value that
        is not the key's JSON object with a non-blank name and password."""
        out = []
        for key, raw in ((INIT_USER, self.init_user), (INNER_CREDENTIALS, self.inner_credentials)):
            if raw.strip():
                out.append((key, _super_user(key, raw)))
        return out

    def cert_users(self) -> CertUsers:
        """Who the client certificates of ``authenticationCertificateCaPath`` are (nobody unset);
        ConfigError for a file that does not load."""
        return CertUsers.from_file(self.certificate_ca_path) if self.certificate_ca_path else CertUsers([])

    @property
    def inner_account(self) -> tuple[str, str] | None:
        """``(accessKey, secretKey)`` of ``innerClientAuthenticationCredentials``, None when unset."""
        if not self.inner_credentials.strip():
            return None
        user = _super_user(INNER_CREDENTIALS, self.inner_credentials)
        return user.username, user.password


def _super_user(key: str, raw: str) -> User:
    name_key, secret_key = _SHAPES[key]
    try:
        doc = orjson.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        return user_from_info({"username": doc.get(name_key), "password": doc.get(secret_key),
                               "userType": UserType.SUPER.value})
    except (ValueError, AuthError) as e:
        raise ConfigError(f'{key}: expected {{"{name_key}": ..., "{secret_key}": ...}}: {e}') from None


def read_auth_settings(get: Callable[[str, str], str], get_bool: Callable[[str, bool], bool]) -> AuthSettings:
    """The settings from ``get(key, default)`` and ``get_bool(key, default)`` (the server's readers of
    its config file); ConfigError for a bad value."""
    def codes(key: str) -> frozenset[int]:
        raw = [c.strip() for c in get(key, "").split(",") if c.strip()]
        if not all(c.isdigit() for c in raw):
            raise ConfigError(f"{key}: expected request codes separated by commas")
        return frozenset(int(c) for c in raw)

    auth = AuthSettings(authentication_enabled=get_bool("authenticationEnabled", False),
                        authorization_enabled=get_bool("authorizationEnabled", False),
                        init_user=get(INIT_USER, ""), inner_credentials=get(INNER_CREDENTIALS, ""),
                        authentication_whitelist=codes("authenticationWhitelist"),
                        authorization_whitelist=codes("authorizationWhitelist"),
                        certificate_ca_path=get(CA_PATH_KEY, "").strip())
    auth.super_users()  # refused at load, not at start
    auth.cert_users()
    return auth


def outgoing_account(auth: AuthSettings, access_key: str, secret_key: str) -> tuple[str, str] | None:
    """The keys a server's own requests (a broker registering with the name servers, syncing from its
    master; controller instances talking to each other) are signed with: the super user of
    ``innerClientAuthenticationCredentials`` when set, else ACL 1.0's ``accessKey``/``secretKey``; None
    when neither is (unsigned)."""
    inner = auth.inner_account
    if inner is not None:
        return inner
    return (access_key, secret_key) if access_key else None
