"""The security policy (afs_security_policy) against real certificates and real TLS clients.

* Every certificate of Debian's ca-certificates bundle is read with the same SPKI bytes,
  subjectAltName entries and validity as the ``cryptography`` package reads.
* The x509 corpus of ``cryptography-vectors``: every certificate cryptography reads is read
  with the same fields, or is in the list of differences below (each with its reason).
* A local TLS server on 127.0.0.1 (Python ``ssl``; a root, an intermediate and leaves made
  with ``cryptography``): each pinning mode accepted with the right pins and refused with
  wrong ones, wrong hosts and wildcard edge cases refused, through Python ``ssl``,
  ``requests``, ``httpx`` and the libcurl example (examples/pinning_with_curl.c); a refused
  server receives no request byte (the server counts what it receives).
"""
from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import re
import socket
import ssl
import subprocess
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import afserialization as afs
from afserialization import (InvalidArgumentError, PinningMode, SecurityPolicy, UntrustedError,
                             read_certificates)

import cryptography_vectors
import httpx
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

REPO = Path(__file__).resolve().parents[2]
CURL_EXAMPLE = os.environ.get("AFS_PINNING_WITH_CURL") or str(REPO / "build" / "pinning_with_curl")
BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


# --------------------------------------------------------------------------------------
# What cryptography reads


def crypto_fields(c: x509.Certificate) -> Dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # serial 0 in real roots
        try:
            san = c.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            dns = san.get_values_for_type(x509.DNSName)
            ips = [i.packed for i in san.get_values_for_type(x509.IPAddress)]
        except x509.ExtensionNotFound:
            dns, ips = [], []
        try:
            spki: Optional[bytes] = c.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        except Exception:   # a key type cryptography cannot load: compared through the TBS
            spki = None
        return {"spki": spki, "dns_names": dns, "ip_addresses": ips,
                "not_before": int(c.not_valid_before_utc.timestamp()),
                "not_after": int(c.not_valid_after_utc.timestamp()),
                "subject": c.subject.public_bytes(), "tbs": c.tbs_certificate_bytes}


def differences(ours: Dict[str, Any], theirs: Dict[str, Any]) -> List[str]:
    out = [k for k in ("dns_names", "ip_addresses", "not_before", "not_after") if ours[k] != theirs[k]]
    if theirs["spki"] != ours["spki"]:
        # cryptography re-encodes the key (RSA-PSS keys as rsaEncryption, explicit EC
        # curves...): then our SPKI must be the bytes after the subject in the TBS.
        if theirs["subject"] + ours["spki"] not in theirs["tbs"]:
            out.append("spki")
    return out


def test_every_certificate_of_debians_bundle() -> None:
    assert BUNDLE.exists(), "apt-get install ca-certificates (scripts/install-deps.sh does)"
    text = BUNDLE.read_bytes()
    blocks = re.findall(rb"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n?", text, re.S)
    assert len(blocks) > 100
    # The whole bundle at once (PEM with many blocks) and each certificate alone.
    everything = read_certificates(text)
    assert len(everything) == len(blocks)
    with_sans = 0
    for i, block in enumerate(blocks):
        theirs = crypto_fields(x509.load_pem_x509_certificate(block))
        ours = read_certificates(block)[0]
        assert ours == everything[i]
        assert theirs["spki"] == ours["spki"], i       # byte-equal for every root of the bundle
        assert differences(ours, theirs) == [], (i, theirs["subject"])
        assert ours["spki_sha256"] == hashlib.sha256(ours["spki"]).digest()
        with_sans += bool(ours["dns_names"] or ours["ip_addresses"])
    # The same through DER.
    der = x509.load_pem_x509_certificate(blocks[0]).public_bytes(serialization.Encoding.DER)
    assert read_certificates(der) == [everything[0]]


# Where we and cryptography disagree on its x509 corpus, and why. Paths are relative to
# cryptography_vectors/x509. "we refuse": cryptography reads it, we refuse it; "they
# refuse": cryptography refuses (the whole certificate, or the field the comparison reads),
# we read it (their fields cannot be compared).
VECTOR_DIFFERENCES = {
    # PEM files that hold private keys next to the certificate: a pin file must not hold a
    # key, so any block other than CERTIFICATE is refused (cryptography takes the first
    # certificate block).
    "cryptography.io.chain_with_garbage.pem": "we refuse: a PRIVATE KEY block",
    "cryptography.io.with_garbage.pem": "we refuse: a PRIVATE KEY block",
    "cryptography.io.with_headers.pem": "we refuse: an RSA PRIVATE KEY block",
    # RFC 5280: dNSName is an IA5String (ASCII); a UTF-8 name cannot match a host anyway.
    "utf8-dnsname.pem": "we refuse: a dNSName with non-ASCII bytes",
    # The subject's Common Name serves in messages only (invalid UTF-8 shown as U+FFFD).
    "custom/invalid_utf8_common_name.pem": "they refuse: invalid UTF-8 in the subject's Common Name",
    # Extension contents we do not read (the policy needs only subjectAltName): SCTs,
    # certificate policies, EKU, name constraints, basic constraints, other GeneralName kinds.
    "badssl-sct-anonymous-sig.der": "they refuse: SCT contents",
    "badssl-sct-none-hash.der": "they refuse: SCT contents",
    "custom/invalid-sct-length.der": "they refuse: SCT contents",
    "custom/invalid-sct-version.der": "they refuse: SCT contents",
    "san_edipartyname.der": "they refuse: ediPartyName (we skip it: it never names a host)",
    "san_x400address.der": "they refuse: x400Address (we skip it: it never names a host)",
    "wosign-bc-invalid.pem": "they refuse: basicConstraints contents",
    "custom/cp_invalid.pem": "they refuse: certificatePolicies contents",
    "custom/cp_invalid2.der": "they refuse: certificatePolicies contents",
    "custom/empty-eku.pem": "they refuse: extendedKeyUsage contents",
    "custom/inhibit_any_policy_negative.pem": "they refuse: inhibitAnyPolicy contents",
    "custom/malformed-ian.pem": "they refuse: issuerAltName contents",
    "custom/nc_invalid_ip4_netmask.der": "they refuse: nameConstraints contents",
    "custom/nc_invalid_ip_netmask.pem": "they refuse: nameConstraints contents",
    "custom/nc_ip_invalid_length.pem": "they refuse: nameConstraints contents",
    # Algorithm parameters we do not interpret (no signature is verified here).
    "custom/dsa_null_alg_params.pem": "they refuse: signature algorithm parameters",
    "custom/ecdsa_null_alg.pem": "they refuse: signature algorithm parameters",
    "PKITS_data/certs/DSAParametersInheritedCACert.crt": "they refuse: DSA parameters inherited (absent)",
    "PKITS_data/certs/ValidDSAParameterInheritanceTest5EE.crt": "they refuse: DSA parameters inherited (absent)",
}


def vector_files() -> List[Tuple[str, Path]]:
    root = Path(cryptography_vectors.__file__).parent / "x509"
    files = [p for p in root.rglob("*") if p.suffix in (".pem", ".der", ".crt") and p.is_file()]
    return sorted((str(p.relative_to(root)), p) for p in files)


def test_cryptography_vectors_x509_corpus() -> None:
    files = vector_files()
    assert len(files) > 500
    counts = {"same": 0, "both refuse": 0}
    found: Dict[str, str] = {}
    for rel, path in files:
        data = path.read_bytes()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                c = (x509.load_pem_x509_certificate(data) if b"-----BEGIN" in data
                     else x509.load_der_x509_certificate(data))
                theirs: Optional[Dict[str, Any]] = crypto_fields(c)
        except Exception:
            theirs = None
        try:
            ours: Optional[Dict[str, Any]] = read_certificates(data)[0]
        except InvalidArgumentError as e:
            assert "byte offset" in str(e) or "PEM" in str(e), (rel, str(e))
            ours = None
        if theirs is not None and ours is not None:
            diff = differences(ours, theirs)
            assert diff == [], (rel, diff)
            counts["same"] += 1
        elif theirs is None and ours is None:
            counts["both refuse"] += 1
        else:
            found[rel] = "we refuse" if ours is None else "they refuse"
    expected = {k: v.split(":")[0] for k, v in VECTOR_DIFFERENCES.items()}
    assert found == expected
    assert counts["same"] > 450


# --------------------------------------------------------------------------------------
# A PKI and a TLS server on 127.0.0.1

NOW = datetime.datetime.now(datetime.timezone.utc)


class Issued:
    def __init__(self, cert: x509.Certificate, key: Any) -> None:
        self.cert, self.key = cert, key
        self.der = cert.public_bytes(serialization.Encoding.DER)
        self.pem = cert.public_bytes(serialization.Encoding.PEM)

    @property
    def pin(self) -> str:
        spki = self.cert.public_key().public_bytes(serialization.Encoding.DER,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
        return "sha256//" + base64.b64encode(hashlib.sha256(spki).digest()).decode()


def issue(cn: str, issuer: Optional[Issued] = None, ca: bool = False, dns: Tuple[str, ...] = (),
          ips: Tuple[str, ...] = (), days: Tuple[int, int] = (-1, 30)) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    b = (x509.CertificateBuilder().subject_name(name)
         .issuer_name(issuer.cert.subject if issuer else name)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(NOW + datetime.timedelta(days=days[0]))
         .not_valid_after(NOW + datetime.timedelta(days=days[1]))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if dns or ips:
        names: List[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        b = b.add_extension(x509.SubjectAlternativeName(names), critical=False)
    if ca:
        b = b.add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                          data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                          crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
    cert = b.sign(issuer.key if issuer else key, hashes.SHA256())
    return Issued(cert, key)


class PKI:
    def __init__(self, where: Path) -> None:
        self.root = issue("AFS Test Root", ca=True)
        self.intermediate = issue("AFS Test Intermediate", self.root, ca=True)
        self.leaf = issue("localhost", self.intermediate,
                          dns=("localhost", "*.wild.test", "xn--caf-dma.test"), ips=("127.0.0.1", "::1"))
        self.other = issue("other.test", self.intermediate, dns=("other.test",))
        self.self_signed = issue("localhost", dns=("localhost",), ips=("127.0.0.1",))
        self.expired = issue("localhost", dns=("localhost",), ips=("127.0.0.1",), days=(-30, -1))
        self.stranger = issue("Stranger Root", ca=True)
        self.dir = where
        self.root_pem = where / "root.pem"
        self.root_pem.write_bytes(self.root.pem)
        for name in ("leaf", "intermediate", "root", "other", "self_signed", "expired", "stranger"):
            (where / f"{name}.pem").write_bytes(getattr(self, name).pem)

    def server_files(self, leaf: Issued, chain: Tuple[Issued, ...]) -> Tuple[str, str]:
        cert = self.dir / f"server-{id(leaf)}.pem"
        key = self.dir / f"server-{id(leaf)}.key"
        cert.write_bytes(leaf.pem + b"".join(c.pem for c in chain))
        key.write_bytes(leaf.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        return str(cert), str(key)


class TLSServer:
    """Answers one HTTP/1.1 request per connection; `received` holds the bytes each finished
    connection delivered after its handshake (0 for a client that stopped before sending)."""

    def __init__(self, certfile: str, keyfile: str) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(certfile, keyfile)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.received: List[int] = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        n = 0
        try:
            conn.settimeout(20)
            with self.ctx.wrap_socket(conn, server_side=True) as tls:
                buf = b""
                while b"\r\n\r\n" not in buf:
                    data = tls.recv(65536)
                    if not data:
                        break
                    buf += data
                n = len(buf)
                if b"\r\n\r\n" in buf:
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()
            with self.cond:
                self.received.append(n)
                self.cond.notify_all()

    def attempt(self, fn: Callable[[], Any]) -> Tuple[Any, int]:
        """Runs one client attempt; returns (its result or exception, the bytes the server
        received on that connection)."""
        with self.cond:
            before = len(self.received)
        try:
            result: Any = fn()
        except Exception as e:   # the refusals under test
            result = e
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.received) > before, timeout=30), "no connection"
            return result, self.received[before]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return PKI(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def servers(pki: PKI) -> Any:
    made = {
        "chain": TLSServer(*pki.server_files(pki.leaf, (pki.intermediate,))),
        "other": TLSServer(*pki.server_files(pki.other, (pki.intermediate,))),
        "self_signed": TLSServer(*pki.server_files(pki.self_signed, ())),
        "expired": TLSServer(*pki.server_files(pki.expired, ())),
        # a forged leaf (self-signed, the right names) sent beside the real intermediate
        "forged": TLSServer(*pki.server_files(issue("localhost", dns=("localhost",), ips=("127.0.0.1",)),
                                              (pki.intermediate,))),
    }
    yield made
    for s in made.values():
        s.close()


# --------------------------------------------------------------------------------------
# Clients


def via_ssl(server: TLSServer, policy: SecurityPolicy, host: str, verify: bool, root: Path) -> bytes:
    if verify:
        ctx = ssl.create_default_context(cafile=str(root))
        ctx.check_hostname = False          # the policy checks the host
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", server.port)) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            source = policy.check_socket(s, host)
            assert source == ("verified chain" if verify else "unverified chain")
            s.sendall(b"GET / HTTP/1.1\r\nHost: " + host.encode("idna") + b"\r\nConnection: close\r\n\r\n")
            answer = b""
            while True:
                data = s.recv(1000)
                if not data:
                    return answer
                answer += data


def via_requests(server: TLSServer, policy: SecurityPolicy, host: str, verify: bool, root: Path) -> bytes:
    with requests.Session() as session:
        session.mount("https://", afs.requests_adapter(policy))
        r = session.get(f"https://{host}:{server.port}/", verify=str(root) if verify else False, timeout=20)
        return r.content


def via_httpx(server: TLSServer, policy: SecurityPolicy, host: str, verify: bool, root: Path) -> bytes:
    ctx: Any = ssl.create_default_context(cafile=str(root)) if verify else False
    with httpx.Client(transport=afs.httpx_transport(policy, verify=ctx), timeout=20) as client:
        return client.get(f"https://{host}:{server.port}/").content


class CurlRefused(Exception):
    """pinning_with_curl exited with 2: the policy refused the server (its message)."""


def via_curl(server: TLSServer, policy_args: List[str], host: str, verify: bool, root: Path) -> bytes:
    if not os.access(CURL_EXAMPLE, os.X_OK):
        pytest.fail(f"examples/pinning_with_curl not built at {CURL_EXAMPLE} (cmake needs the curl and "
                    "OpenSSL headers: scripts/install-deps.sh) or set AFS_PINNING_WITH_CURL")
    args = [CURL_EXAMPLE] + policy_args + ["--resolve", f"{host}:{server.port}:127.0.0.1"]
    args += ["--cacert", str(root if verify else root.parent / "stranger.pem")]
    url_host = f"[{host}]" if ":" in host else host
    p = subprocess.run(args + [f"https://{url_host}:{server.port}/"], capture_output=True, timeout=60)
    if p.returncode == 2:
        raise CurlRefused(p.stderr.decode())
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode())
    return p.stdout


def policy_args(mode: PinningMode, certs: List[Path], keys: List[str], allow_invalid: bool) -> List[str]:
    out = ["--mode", {PinningMode.NONE: "none", PinningMode.PUBLIC_KEY: "public-key",
                      PinningMode.CERTIFICATE: "certificate"}[mode]]
    for c in certs:
        out += ["--pin-cert", str(c)]
    if keys:
        out += ["--pin-key", ";".join(keys)]
    if allow_invalid:
        out.append("--allow-invalid")
    return out


# Scenarios: (name, server, mode, pinned certificates, pinned keys, allow invalid, host,
# verify (the stack verifies against the test root), accepted).
SCENARIOS = [
    ("none, trusted chain", "chain", PinningMode.NONE, [], [], False, "localhost", True, True),
    ("none, IP literal", "chain", PinningMode.NONE, [], [], False, "127.0.0.1", True, True),
    ("none, untrusted chain", "chain", PinningMode.NONE, [], [], False, "localhost", False, False),
    ("certificate, leaf pinned", "chain", PinningMode.CERTIFICATE, ["leaf"], [], False, "localhost", True, True),
    ("certificate, intermediate pinned", "chain", PinningMode.CERTIFICATE, ["intermediate"], [], False, "localhost", True, True),
    ("certificate, root pinned (in the verified chain)", "chain", PinningMode.CERTIFICATE, ["root"], [], False, "localhost", True, True),
    ("certificate, wrong pin", "chain", PinningMode.CERTIFICATE, ["other"], [], False, "localhost", True, False),
    # the stack does not verify here: the policy alone checks the host
    ("certificate, wrong host", "other", PinningMode.CERTIFICATE, ["other"], [], False, "localhost", False, False),
    ("certificate, self-signed leaf pinned, untrusted", "self_signed", PinningMode.CERTIFICATE, ["self_signed"], [], False, "localhost", False, True),
    ("certificate, expired self-signed leaf pinned", "expired", PinningMode.CERTIFICATE, ["expired"], [], False, "localhost", False, False),
    ("certificate, intermediate pinned beside a forged leaf", "forged", PinningMode.CERTIFICATE, ["intermediate"], [], True, "localhost", False, False),
    ("public key, leaf key pinned", "chain", PinningMode.PUBLIC_KEY, [], ["leaf"], False, "localhost", True, True),
    ("public key, intermediate certificate pinned", "chain", PinningMode.PUBLIC_KEY, ["intermediate"], [], False, "localhost", True, True),
    ("public key, wrong key", "chain", PinningMode.PUBLIC_KEY, [], ["other"], False, "localhost", True, False),
    ("public key, intermediate key beside a forged leaf", "forged", PinningMode.PUBLIC_KEY, [], ["intermediate"], True, "localhost", False, False),
    ("public key, self-signed key pinned, invalid allowed", "self_signed", PinningMode.PUBLIC_KEY, [], ["self_signed"], True, "localhost", False, True),
    ("public key, self-signed key pinned, invalid not allowed", "self_signed", PinningMode.PUBLIC_KEY, [], ["self_signed"], False, "localhost", False, False),
    ("none, invalid allowed, domain validated, no pins (rule 1)", "self_signed", PinningMode.NONE, [], [], True, "localhost", False, False),
]

# Host-name cases: the server is "chain" (SANs localhost, *.wild.test, xn--caf-dma.test,
# 127.0.0.1, ::1); the leaf is pinned; the stack verifies the chain.
HOSTS = [
    ("a.wild.test", True),
    ("A.Wild.TEST", True),
    ("wild.test", False),            # the wildcard needs one label
    ("a.b.wild.test", False),        # and only one
    ("café.test", True),             # U-label host, A-label SAN
    ("xn--caf-dma.test", True),
    ("cafe.test", False),
    ("::1", True),
    ("127.0.0.2", False),
    ("evil.test", False),
]


def pinned(pki: PKI, mode: PinningMode, certs: List[str], keys: List[str], allow_invalid: bool) -> SecurityPolicy:
    return SecurityPolicy(mode, pinned_certificates=[getattr(pki, n).pem for n in certs],
                          pinned_public_keys=[getattr(pki, n).pin for n in keys],
                          allows_invalid_certificates=allow_invalid)


def check(server: TLSServer, fn: Callable[[], bytes], accepted: bool, what: str) -> None:
    result, received = server.attempt(fn)
    if accepted:
        assert isinstance(result, bytes) and result.endswith(b"ok"), (what, result)
        assert received > 0, what
    else:
        assert isinstance(result, (UntrustedError, CurlRefused)), (what, repr(result))
        assert "AFS_E_UNTRUSTED" in str(result) or isinstance(result, UntrustedError), (what, str(result))
        assert received == 0, (what, "the refused server received", received, "bytes")


CLIENTS = {"ssl": via_ssl, "requests": via_requests, "httpx": via_httpx}


@pytest.mark.parametrize("client", ["ssl", "requests", "httpx", "curl"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_modes_through_real_clients(pki: PKI, servers: Dict[str, TLSServer], client: str, scenario: Tuple) -> None:
    name, server_name, mode, certs, keys, allow_invalid, host, verify, accepted = scenario
    server = servers[server_name]
    if client == "curl":
        paths = [pki.dir / f"{n}.pem" for n in certs]
        fn = lambda: via_curl(server, policy_args(mode, paths, [getattr(pki, k).pin for k in keys], allow_invalid),
                              host, verify, pki.root_pem)
    else:
        policy = pinned(pki, mode, certs, keys, allow_invalid)
        fn = lambda: CLIENTS[client](server, policy, host, verify, pki.root_pem)
    check(server, fn, accepted, f"{client}: {name}")


HOST_CASES = [("ssl", h, a) for h, a in HOSTS] + [
    # curl connects to an IP literal itself (the server listens on 127.0.0.1 only)
    ("curl", h, a) for h, a in HOSTS if not any(c in h for c in ":0123456789")]


@pytest.mark.parametrize("client,host,accepted", HOST_CASES)
def test_host_names(pki: PKI, servers: Dict[str, TLSServer], client: str, host: str, accepted: bool) -> None:
    server = servers["chain"]
    if client == "curl":
        if not host.isascii():
            host = host.encode("idna").decode()   # curl's --resolve takes the A-label
        fn = lambda: via_curl(server, policy_args(PinningMode.CERTIFICATE, [pki.dir / "leaf.pem"], [], False),
                              host, True, pki.root_pem)
    else:
        policy = pinned(pki, PinningMode.CERTIFICATE, ["leaf"], [], False)
        fn = lambda: via_ssl(server, policy, host, True, pki.root_pem)
    check(server, fn, accepted, f"{client}: {host}")


def test_requests_and_httpx_refuse_a_wrong_host(pki: PKI, servers: Dict[str, TLSServer]) -> None:
    # The stack does not verify (verify=False): the policy alone checks the host (127.0.0.1
    # is not among other.test's names) and refuses before the request is written.
    policy = pinned(pki, PinningMode.CERTIFICATE, ["other"], [], True)
    for client in (via_requests, via_httpx):
        check(servers["other"], lambda: client(servers["other"], policy, "127.0.0.1", False, pki.root_pem), False,
              client.__name__)
    no_domain = SecurityPolicy(PinningMode.CERTIFICATE, pinned_certificates=[pki.other.der], validates_domain_name=False)
    check(servers["other"], lambda: via_requests(servers["other"], no_domain, "127.0.0.1", False, pki.root_pem), True,
          "requests without domain validation")


def test_untrusted_message_names_rule_host_and_certificate(pki: PKI, servers: Dict[str, TLSServer]) -> None:
    policy = pinned(pki, PinningMode.CERTIFICATE, ["leaf"], [], False)
    with pytest.raises(UntrustedError) as e:
        policy.evaluate([pki.other.der, pki.intermediate.der], "localhost", True)
    text = str(e.value)
    assert "rule 2" in text and "localhost" in text and "other.test" in text
    with pytest.raises(UntrustedError, match=r"rule 4 \(certificate pinning\)"):
        policy.evaluate([pki.other.der, pki.intermediate.der], None, True)


# --------------------------------------------------------------------------------------
# The Python API itself


def test_pins_and_arguments(pki: PKI) -> None:
    assert afs.public_key_pin(pki.leaf.pem) == pki.leaf.pin
    assert afs.public_key_pin(pki.leaf.pem + pki.other.pem) == pki.leaf.pin + ";" + pki.other.pin
    policy = SecurityPolicy(PinningMode.PUBLIC_KEY)
    with pytest.raises(InvalidArgumentError, match="entry 2"):
        policy.add_pinned_public_keys(pki.leaf.pin + ";sha256//tooshort=")
    with pytest.raises(UntrustedError, match="rule 4"):   # nothing was added
        policy.evaluate([pki.leaf.der], None, True)
    policy.add_pinned_public_keys(pki.leaf.pin)
    policy.evaluate([pki.leaf.der], "localhost", True)
    with pytest.raises(InvalidArgumentError, match="byte offset"):
        SecurityPolicy(PinningMode.CERTIFICATE, pinned_certificates=[pki.leaf.der[:-1]])
    with pytest.raises(InvalidArgumentError, match="chain\\[1\\]"):
        policy.evaluate([pki.leaf.der, b"\x30\x80"], None, True)
    with pytest.raises(InvalidArgumentError, match="count is 0"):
        policy.evaluate([], None, True)
    copy = policy.copy()
    policy.close()
    copy.evaluate([pki.leaf.der], None, True)


def test_limits(pki: PKI) -> None:
    policy = SecurityPolicy(PinningMode.CERTIFICATE, pinned_certificates=[pki.leaf.der],
                            limits={"max_pins": 1, "max_chain": 1})
    assert policy.limits == {"max_pins": 1, "max_chain": 1}
    with pytest.raises(afs.LimitError, match="at most 1 pins"):
        policy.add_pinned_certificate(pki.other.der)
    with pytest.raises(InvalidArgumentError, match="more than the limit of 1 certificates"):
        policy.evaluate([pki.leaf.der, pki.other.der], None, True)
    assert policy.copy().limits == policy.limits
    with pytest.raises(InvalidArgumentError, match="nested deeper than 2 levels"):
        read_certificates(pki.leaf.der, max_der_depth=2)
    with pytest.raises(InvalidArgumentError, match="more than the limit of 10"):
        read_certificates(pki.leaf.pem, max_pem_bytes=10)
    assert read_certificates(pki.leaf.der, max_der_depth=64)[0] == read_certificates(pki.leaf.der)[0]
    with pytest.raises(InvalidArgumentError, match="max_der_depth 300"):
        read_certificates(pki.leaf.der, max_der_depth=300)
    with pytest.raises(TypeError, match="unknown limit"):
        SecurityPolicy(limits={"max_pinz": 1})
    with pytest.raises(ValueError, match="at least 1"):
        read_certificates(pki.leaf.der, max_pins=0)


def test_time_bounds_a_pinned_untrusted_leaf(pki: PKI) -> None:
    leaf = read_certificates(pki.self_signed.der)[0]
    for t, ok in ((leaf["not_before"] - 1, False), (leaf["not_before"], True),
                  (leaf["not_after"], True), (leaf["not_after"] + 1, False)):
        policy = SecurityPolicy(PinningMode.CERTIFICATE, pinned_certificates=[pki.self_signed.der], time=t)
        if ok:
            policy.evaluate([pki.self_signed.der], "localhost", False)
        else:
            with pytest.raises(UntrustedError, match="validity"):
                policy.evaluate([pki.self_signed.der], "localhost", False)


def test_concurrent_evaluations(pki: PKI) -> None:
    policy = pinned(pki, PinningMode.PUBLIC_KEY, [], ["leaf"], False)
    errors: List[BaseException] = []

    def work() -> None:
        try:
            for _ in range(200):
                policy.evaluate([pki.leaf.der, pki.intermediate.der], "a.wild.test", True)
                with pytest.raises(UntrustedError):
                    policy.evaluate([pki.other.der, pki.intermediate.der], "other.test", True)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


class LeafOnlySocket:
    """An SSL socket without get_verified_chain (as on Python < 3.10): only the leaf."""

    def __init__(self, sock: ssl.SSLSocket) -> None:
        self._sock = sock
        self.context = sock.context
        self.server_hostname = sock.server_hostname

    def getpeercert(self, binary_form: bool = False) -> Any:
        return self._sock.getpeercert(binary_form)


def test_check_socket_falls_back_to_the_leaf(pki: PKI, servers: Dict[str, TLSServer]) -> None:
    server = servers["chain"]
    ctx = ssl.create_default_context(cafile=str(pki.root_pem))
    leaf_pinned = pinned(pki, PinningMode.CERTIFICATE, ["leaf"], [], False)
    root_pinned = pinned(pki, PinningMode.CERTIFICATE, ["root"], [], False)

    def run() -> bytes:
        with socket.create_connection(("127.0.0.1", server.port)) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                assert leaf_pinned.check_socket(LeafOnlySocket(s)) == "leaf only"
                # the root is not in a leaf-only chain: "a pinned root the server did not
                # send is not found"
                with pytest.raises(UntrustedError, match="rule 4"):
                    root_pinned.check_socket(LeafOnlySocket(s))
                assert root_pinned.check_socket(s) == "verified chain"
                return b"ok"
    result, received = server.attempt(run)
    assert result == b"ok" and received == 0


def test_chain_of_cryptography_certificates(pki: PKI) -> None:
    policy = pinned(pki, PinningMode.CERTIFICATE, ["intermediate"], [], False)
    policy.evaluate([pki.leaf.cert, pki.intermediate.cert], "localhost", True)
    with pytest.raises(TypeError, match="chain\\[0\\]"):
        policy.evaluate([object()], "localhost", True)

