"""ACL 2.0's users and ACLs, kept in a server's config directory (the broker's ``config/``, the name
server's where it keeps ``kvConfig.json``): ``users.json`` and ``acls.json``, each written
atomically (:mod:`.config_file`, mode 0600: the users file holds the passwords clients sign with)
after every change and read at start.

::

    users.json  {"users": [{"username": "alice", "password": "...", "userType": "Normal",
                            "userStatus": "enable"}, ...]}
    acls.json   {"acls": [<AclInfo>, ...]}

The rules of each change are Apache 5.3's (``AuthenticationMetadataManagerImpl``,
``AuthorizationMetadataManagerImpl``): a user is created once; an update changes only what it
names; deleting a user deletes its ACL; an ACL needs an existing user and merges into the one it
has (create and update alike); a delete names the user and, optionally, one resource's entry.
Refusals are :class:`~pyrocketmq.server.acl2.AuthError` with Apache's words.

The start creates the super user ``initAuthenticationUser`` (``{"username": ..., "password": ...}``)
and the server's own ``innerClientAuthenticationCredentials`` (``{"accessKey": ..., "secretKey":
...}``, :mod:`.auth_settings`) when they do not exist yet; a later change of those settings does not
touch a stored user.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from pyrocketmq.remoting.properties import ConfigError

from .acl2 import (
    Acl,
    AuthError,
    PolicyType,
    Resource,
    User,
    acl_from_info,
    acl_to_info,
    filter_acls,
    user_from_info,
    user_to_info,
    user_updated,
)
from .auth_settings import AuthSettings
from .config_file import load_json, save_json

log = logging.getLogger("pyrocketmq.auth")
USERS_FILE = "users.json"
ACLS_FILE = "acls.json"
SECRET_MODE = 0o600


class AuthMetadata:
    """The users and ACLs of one broker or name server. ``user(name)`` and ``acl(name)`` are what the
    run-time check reads (:class:`~pyrocketmq.server.acl_service.UserAccess`).

    Example::

        meta = AuthMetadata("/store/config")
        meta.load()                                   # AuthError when a file does not parse
        meta.create_user(User("alice", "secret"))
    """

    def __init__(self, config_dir: str) -> None:
        self.users_path = os.path.join(config_dir, USERS_FILE)
        self.acls_path = os.path.join(config_dir, ACLS_FILE)
        self.users: dict[str, User] = {}
        self.acls: dict[str, Acl] = {}
        """By username."""

    @classmethod
    def open(cls, config_dir: str, settings: AuthSettings) -> AuthMetadata:
        """The stored users and ACLs with the configured super users made (what a server's start
        does); ConfigError when a file does not parse or a setting names no user."""
        meta = cls(config_dir)
        try:
            meta.load()
            meta.init_users(settings)
        except AuthError as e:
            raise ConfigError(str(e)) from None
        return meta

    # -- loading ------------------------------------------------------------------------------------
    def load(self) -> None:
        users_doc = _read(self.users_path, "users")
        acls_doc = _read(self.acls_path, "acls")
        users: dict[str, User] = {}
        for i, info in enumerate(users_doc):
            try:
                user = user_from_info(info if isinstance(info, dict) else {})
            except AuthError as e:
                raise AuthError(f"{self.users_path}: users[{i}]: {e}") from None
            users[user.username] = user
        acls: dict[str, Acl] = {}
        for i, info in enumerate(acls_doc):
            try:
                acl = acl_from_info(info if isinstance(info, dict) else {})
            except AuthError as e:
                raise AuthError(f"{self.acls_path}: acls[{i}]: {e}") from None
            acls[acl.subject.partition(":")[2]] = acl
        self.users, self.acls = users, acls
        log.info("ACL 2.0: %d users and %d ACLs loaded", len(users), len(acls))

    def init_users(self, settings: AuthSettings) -> None:
        """Create the configured super users that do not exist yet (see the module docstring);
        ConfigError for a setting that names none."""
        for key, user in settings.super_users():
            if user.username not in self.users:
                self.create_user(user)
                log.info("ACL 2.0: super user %s created from %s", user.username, key)

    # -- users ------------------------------------------------------------------------------------
    def user(self, username: str) -> User | None:
        return self.users.get(username)

    def create_user(self, user: User) -> None:
        if user.username in self.users:
            raise AuthError("The user is existed")
        self.users[user.username] = user
        self._save_users()

    def update_user(self, username: str, info: dict[str, Any]) -> User:
        old = self.users.get(username)
        if old is None:
            raise AuthError("The user is not exist")
        self.users[username] = new = user_updated(old, info)
        self._save_users()
        return new

    def delete_user(self, username: str) -> None:
        """The user and its ACL (nothing when there is no such user)."""
        if self.users.pop(username, None) is not None:
            self._save_users()
        if self.acls.pop(username, None) is not None:
            self._save_acls()

    def list_users(self, name_filter: str | None = None) -> list[User]:
        return [u for name, u in sorted(self.users.items()) if not name_filter or name_filter in name]

    # -- ACLs -------------------------------------------------------------------------------------
    def acl(self, username: str) -> Acl | None:
        return self.acls.get(username)

    def put_acl(self, username: str, acl: Acl) -> Acl:
        """Merge ``acl`` into the user's (or make it the user's first)."""
        if username not in self.users:
            raise AuthError(f"The subject of {acl.subject} is not exist.")
        old = self.acls.get(username)
        self.acls[username] = new = acl if old is None else old.merged(acl.policies)
        self._save_acls()
        return new

    def delete_acl(self, username: str, policy_type: PolicyType | None = None,
                   resource: Resource | None = None) -> None:
        """The user's whole ACL, or only ``resource``'s entry of ``policy_type`` (Custom by default)."""
        if username not in self.users:
            raise AuthError("The subject is not exist.")
        old = self.acls.get(username)
        if old is None:
            raise AuthError("The acl is not exist.")
        left = None if resource is None else old.without(policy_type or PolicyType.CUSTOM, resource)
        if left is None:
            del self.acls[username]
        else:
            self.acls[username] = left
        self._save_acls()

    def get_acl(self, username: str) -> Acl | None:
        if username not in self.users:
            raise AuthError("The subject is not exist.")
        return self.acls.get(username)

    def list_acls(self, subject_filter: str | None = None, resource_filter: str | None = None) -> list[Acl]:
        return filter_acls((a for _, a in sorted(self.acls.items())), subject_filter, resource_filter)

    # -- files ------------------------------------------------------------------------------------
    def _save_users(self) -> None:
        save_json(self.users_path, {"users": [user_to_info(u) for _, u in sorted(self.users.items())]},
                  SECRET_MODE)

    def _save_acls(self) -> None:
        acls = [acl_to_info(a) for _, a in sorted(self.acls.items())]
        save_json(self.acls_path, {"acls": acls}, SECRET_MODE)


def _read(path: str, key: str) -> list[Any]:
    doc = load_json(path)
    if doc is None:
        return []
    items = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise AuthError(f"{path}: expected {{\"{key}\": [...]}}")
    return items
