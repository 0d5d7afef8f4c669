"""Throwaway certificates for the TLS tests, made by trustme: a CA, a node
certificate and a client certificate it signs (both for 127.0.0.1 and
localhost), and a second CA with its own node certificate (a stranger)."""

import os
from dataclasses import dataclass, field

import trustme


@dataclass
class Identity:
    cert: str  # PEM certificate chain file
    key: str  # PEM private key file


@dataclass
class Certs:
    ca: str  # the cluster's CA certificate
    node: Identity  # signed by ca
    client: Identity  # signed by ca
    other_ca: str  # a CA nobody here trusts
    stranger: Identity  # signed by other_ca
    authority: object = field(repr=False, default=None)  # the trustme.CA of ca

    def issue(self, cert, key):
        """A new certificate from ca (for 127.0.0.1, localhost), written over
        the files ``cert`` and ``key``: a rotation in place."""
        issued = self.authority.issue_cert("127.0.0.1", "localhost", "::1")
        issued.cert_chain_pems[0].write_to_path(cert)
        issued.private_key_pem.write_to_path(key)

    def node_config(self, identity=None):
        """Config lines giving a node its certificate, key and CA."""
        identity = identity or self.node
        ca = self.other_ca if identity is self.stranger else self.ca
        return (f"tls-cert-file {identity.cert}\ntls-key-file {identity.key}\n"
                f"tls-ca-cert-file {ca}\n")


def _identity(ca, directory, name):
    issued = ca.issue_cert("127.0.0.1", "localhost", "::1")
    cert = os.path.join(directory, f"{name}.crt")
    key = os.path.join(directory, f"{name}.key")
    issued.cert_chain_pems[0].write_to_path(cert)
    for extra in issued.cert_chain_pems[1:]:
        extra.write_to_path(cert, append=True)
    issued.private_key_pem.write_to_path(key)
    return Identity(cert, key)


def make_certs(directory):
    ca = trustme.CA()
    other = trustme.CA()
    ca_path = os.path.join(directory, "ca.crt")
    other_path = os.path.join(directory, "other-ca.crt")
    ca.cert_pem.write_to_path(ca_path)
    other.cert_pem.write_to_path(other_path)
    return Certs(ca=ca_path, node=_identity(ca, directory, "node"),
                 client=_identity(ca, directory, "client"), other_ca=other_path,
                 stranger=_identity(other, directory, "stranger"), authority=ca)
