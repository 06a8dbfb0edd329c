"""Check an OpenSSH host certificate against the ``@cert-authority`` keys of known_hosts.

paramiko accepts a host certificate in the handshake (the server proves it holds the certified
key) but checks nothing of the certificate itself: who signed it, for which host names, until
when.  Those checks are made here, the ones OpenSSH's ``check_host_cert`` and
``sshkey_cert_check_authority`` make (PROTOCOL.certkeys): a host certificate, signed by a key a
``@cert-authority`` line lists for this host, the signature valid, the host name among the
principals (an empty list means any host, as OpenSSH has it), inside its validity interval, with
no critical options (none is defined for host certificates: OpenSSH refuses any).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timezone

import paramiko
from paramiko.message import Message
from paramiko.ssh_exception import SSHException

__all__ = ["CERT_SUFFIX", "HostCertificate", "certificate_problem", "parse_certificate"]

CERT_SUFFIX = "-cert-v01@openssh.com"
_HOST_CERT = 2  # SSH2_CERT_TYPE_HOST
_FOREVER = 0xFFFFFFFFFFFFFFFF

# How many wire fields the public key has between the nonce and the serial, per plain key type.
_KEY_FIELDS = {"ssh-ed25519": 1, "ssh-rsa": 2, "ssh-dss": 4}


@dataclass(frozen=True)
class HostCertificate:
    """The fields of an ``*-cert-v01@openssh.com`` blob that a host check reads."""

    key_type: str  # the plain type: ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256 ...
    key_blob: bytes  # the certified key as a plain public key blob (what known_hosts would list)
    serial: int
    cert_type: int  # 1 user, 2 host
    key_id: str
    principals: tuple[str, ...]
    valid_after: int
    valid_before: int
    critical_options: bytes
    ca_blob: bytes  # the signing CA's public key blob
    signature: bytes
    signed: bytes  # everything the signature covers


def _fields_of(key_type: str) -> int:
    if key_type.startswith("ecdsa-sha2-"):
        return 2  # curve name, point
    if key_type not in _KEY_FIELDS:
        raise ValueError(f"unsupported certificate key type {key_type!r}")
    return _KEY_FIELDS[key_type]


def parse_certificate(blob: bytes) -> HostCertificate:
    """The certificate in ``blob`` (SSH wire format); ValueError when it is not one."""
    try:
        msg = Message(blob)
        cert_type_name = msg.get_text()
        if not cert_type_name.endswith(CERT_SUFFIX):
            raise ValueError(f"{cert_type_name!r} is not a certificate type")
        key_type = cert_type_name[: -len(CERT_SUFFIX)]
        if key_type.startswith("rsa-sha2-"):
            key_type = "ssh-rsa"
        msg.get_string()  # nonce
        start = msg.packet.tell()
        for _ in range(_fields_of(key_type)):
            msg.get_string()  # an mpint is a length-prefixed string on the wire too
        key_fields = blob[start : msg.packet.tell()]
        plain = Message()
        plain.add_string(key_type)
        serial = msg.get_int64()
        cert_type = msg.get_int()
        key_id = msg.get_text()
        packed = msg.get_string()
        principals_msg = Message(packed)
        principals = []
        while principals_msg.packet.tell() < len(packed):
            principals.append(principals_msg.get_text())
        valid_after, valid_before = msg.get_int64(), msg.get_int64()
        critical = msg.get_string()
        msg.get_string()  # extensions: permissions for user certificates, none for hosts
        msg.get_string()  # reserved
        ca_blob = msg.get_string()
        signed = blob[: msg.packet.tell()]
        signature = msg.get_string()
    except (SSHException, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed certificate: {exc}") from exc
    if not signature:
        raise ValueError("malformed certificate: no signature")
    return HostCertificate(
        key_type, plain.asbytes() + key_fields, serial, cert_type, key_id, tuple(principals),
        valid_after, valid_before, critical, ca_blob, signature, signed,
    )


def _when(seconds: int) -> str:
    if seconds >= _FOREVER:
        return "forever"
    return datetime.fromtimestamp(min(seconds, 253402300799), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _signature_valid(cert: HostCertificate) -> bool:
    try:
        ca_type = Message(cert.ca_blob).get_text()
        ca = paramiko.PKey.from_type_string(ca_type, cert.ca_blob)
        return bool(ca.verify_ssh_sig(cert.signed, Message(cert.signature)))
    except Exception:  # noqa: BLE001 - an unknown CA key type or a garbled signature: not valid
        return False


def certificate_problem(
    cert: HostCertificate, *, host: str, now: float, authorities: Collection[bytes], revoked: Collection[bytes]
) -> str | None:
    """Why ``cert`` does not vouch for ``host`` at ``now``, or None when it does.

    ``authorities``: the CA key blobs of the ``@cert-authority`` lines for this host;
    ``revoked``: the key blobs of the ``@revoked`` lines (the CA's or the host key's own).
    """
    if cert.cert_type != _HOST_CERT:
        return f"it is a user certificate (type {cert.cert_type}), not a host certificate"
    if cert.ca_blob in revoked:
        return "the CA that signed it is marked @revoked"
    if cert.ca_blob not in authorities:
        return "it is signed by a CA that no @cert-authority line lists for this host"
    if not _signature_valid(cert):
        return "its CA signature does not verify"
    if cert.principals and host not in cert.principals:
        return f"it is for {', '.join(cert.principals)}, not for {host}"
    if now < cert.valid_after:
        return f"it is not valid before {_when(cert.valid_after)}"
    if now >= cert.valid_before:
        return f"it expired at {_when(cert.valid_before)}"
    if cert.critical_options:
        return "it carries critical options, which no host certificate may"
    return None
