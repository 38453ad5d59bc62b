"""A private CA, a node certificate and a client certificate for the secure sandbox.

Made with the ``cryptography`` package (no openssl command line to depend on). The node
certificate names the node's address both as an IP and a DNS subject alternative name,
so clients verify hostnames exactly as they do against a production cluster.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from ipaddress import ip_address
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALID_FOR = dt.timedelta(days=825)


@dataclass(frozen=True)
class TlsFiles:
    """Where the PEM files live: the CA, the node's key+chain, the client's cert and key."""

    root: Path

    @property
    def ca(self) -> Path:
        return self.root / "ca.pem"

    @property
    def node(self) -> Path:
        """Private key then certificate: what Cassandra's PEM keystore reads."""
        return self.root / "node.pem"

    @property
    def client_cert(self) -> Path:
        return self.root / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.root / "client.key"

    def exist(self) -> bool:
        return all(p.is_file() for p in (self.ca, self.node, self.client_cert, self.client_key))


def ensure_certificates(root: Path, address: str) -> TlsFiles:
    """The sandbox's TLS files, made once (kept across restarts: clients keep trusting)."""
    files = TlsFiles(root)
    if files.exist():
        return files
    root.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cdcgen sandbox CA")])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    node_key = ec.generate_private_key(ec.SECP256R1())
    node = (
        _builder(_name(address), ca_name, node_key.public_key())
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ip_address(address)), x509.DNSName(address)]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = (
        _builder(_name("cdcgen client"), ca_name, client_key.public_key())
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write(files.ca, _pem(ca))
    _write(files.node, _key_pem(node_key) + _pem(node), private=True)
    _write(files.client_cert, _pem(client))
    _write(files.client_key, _key_pem(client_key), private=True)
    return files


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + _VALID_FOR)
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
