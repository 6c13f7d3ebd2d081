"""A throwaway CA-less self-signed certificate for the fake API server's HTTPS mode (so the
clients' TLS, ``certificate-authority-data`` and in-cluster config paths run for real)."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServerCert:
    cert_pem: bytes
    key_pem: bytes

    def ssl_context(self, directory: Path) -> ssl.SSLContext:
        cert, key = directory / "apiserver.crt", directory / "apiserver.key"
        cert.write_bytes(self.cert_pem)
        key.write_bytes(self.key_pem)
        key.chmod(0o600)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(cert), str(key))
        return ctx


def self_signed(host: str = "127.0.0.1") -> ServerCert:
    """A 1-day EC certificate valid for ``host``, localhost and 127.0.0.1 (it is its own CA)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "openforge-fake-kube-apiserver")])
    sans: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    try:
        ip = ipaddress.ip_address(host)
        if str(ip) != "127.0.0.1":
            sans.append(x509.IPAddress(ip))
    except ValueError:
        sans.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return ServerCert(cert.public_bytes(serialization.Encoding.PEM),
                      key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))
