"""AFNetworking's ``AFSecurityPolicy`` for Python's TLS clients: certificate and public-key
pinning and host-name validation (``afs_security_policy``, header section 13).

The library verifies no signature, builds no chain and keeps no trust store: Python's
``ssl`` does that, and the policy decides over the chain ``ssl`` verified and its verdict.
A certificate the server did not send (a root left out of the handshake) is found only when
``ssl`` puts it in the verified chain (it does: the verified chain ends at the trust anchor).

::

    import requests
    import afserialization as afs

    policy = afs.SecurityPolicy(afs.PinningMode.PUBLIC_KEY,
                                pinned_public_keys=["sha256//YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="])
    session = requests.Session()
    session.mount("https://", afs.requests_adapter(policy))
    session.get("https://example.com/")      # UntrustedError before any request byte is sent

    with httpx.Client(transport=afs.httpx_transport(policy)) as client:
        client.get("https://example.com/")
"""
from __future__ import annotations

import base64
import ctypes
import enum
import ssl
from ctypes import byref, c_size_t, c_void_p, cast
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _ffi
from ._enum import QuietEnumMeta
from ._ffi import lib
from ._handle import CHandle
from .errors import InvalidArgumentError, Status, UntrustedError
from .values import tree_to_python

__all__ = ["PinningMode", "SecurityPolicy", "read_certificates", "public_key_pin",
           "requests_adapter", "httpx_transport", "UntrustedError"]

CertificateBytes = Union[bytes, bytearray, memoryview, str]


class PinningMode(enum.IntEnum, metaclass=QuietEnumMeta):
    """AFSSLPinningMode (``afs_pinning_mode``)."""

    NONE = 0
    PUBLIC_KEY = 1
    CERTIFICATE = 2


def _bytes(data: Any, what: str) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    public_bytes = getattr(data, "public_bytes", None)   # ssl's Certificate, cryptography's
    if public_bytes is not None:
        try:
            return bytes(public_bytes(_DER))
        except (TypeError, ValueError, AttributeError):
            pass
        try:
            from cryptography.hazmat.primitives.serialization import Encoding
            return bytes(public_bytes(Encoding.DER))
        except Exception:
            pass
    raise TypeError(f"{what} must be bytes (DER), PEM text or an ssl certificate, "
                    f"not {type(data).__name__}")


_DER = getattr(ssl, "ENCODING_DER", getattr(getattr(ssl, "_ssl", None), "ENCODING_DER", 1))


#: The fields of ``afs_security_limits``, in order.
LIMIT_NAMES = tuple(name for name, _ in _ffi.afs_security_limits._fields_)


def _limits(limits: Mapping[str, int]) -> Any:
    """An ``afs_security_limits`` from keyword arguments (missing ones: the defaults)."""
    unknown = set(limits) - set(LIMIT_NAMES)
    if unknown:
        raise TypeError(f"unknown limit(s): {', '.join(sorted(unknown))}; known: {', '.join(LIMIT_NAMES)}")
    for name, v in limits.items():
        if int(v) < 1:
            raise ValueError(f"{name} must be at least 1")
    return _ffi.afs_security_limits(*(int(limits.get(n, 0)) for n in LIMIT_NAMES))


def read_certificates(der_or_pem: CertificateBytes, **limits: int) -> List[dict]:
    """The certificates of DER bytes or PEM text as the policy reads them
    (``afs_certificate_read``): dictionaries with ``spki``, ``spki_sha256``, ``dns_names``,
    ``ip_addresses``, ``not_before``, ``not_after`` (Unix seconds), ``common_name`` and
    ``version``. Raises :class:`InvalidArgumentError` naming the field and byte offset.
    ``limits``: ``max_certificate_bytes``, ``max_pem_bytes``, ``max_der_depth`` (see
    ``afs_security_limits``; defaults 1 MiB, 16 MiB, 32)."""
    data = _bytes(der_or_pem, "der_or_pem")
    out = _ffi.c_value_p()
    lib.afs_certificate_read_with_limits(data, len(data), byref(_limits(limits)) if limits else None,
                                         byref(out))
    try:
        return tree_to_python(cast(out, c_void_p).value)
    finally:
        lib.raw.afs_value_free(out)


def public_key_pin(der_or_pem: CertificateBytes) -> str:
    """The libcurl-format pin (``sha256//BASE64``) of a certificate's public key; several
    PEM certificates give their pins joined by ``;``."""
    return ";".join("sha256//" + base64.b64encode(c["spki_sha256"]).decode("ascii")
                    for c in read_certificates(der_or_pem))


class SecurityPolicy:
    """A security policy (``afs_security_policy``). Configure it once; :meth:`evaluate` and
    :meth:`check_socket` may then run on many threads at once."""

    def __init__(self, mode: PinningMode = PinningMode.NONE,
                 pinned_certificates: Iterable[CertificateBytes] = (),
                 pinned_public_keys: Union[str, Iterable[str]] = (),
                 allows_invalid_certificates: bool = False,
                 validates_domain_name: bool = True,
                 time: Optional[int] = None,
                 limits: Optional[Mapping[str, int]] = None) -> None:
        """
        Args:
            mode: :class:`PinningMode`.
            pinned_certificates: certificates as DER bytes or PEM text (every CERTIFICATE
                block of a PEM text is pinned).
            pinned_public_keys: libcurl-format pins, ``"sha256//BASE64"``: a list, or one
                string of entries separated by ``;``.
            allows_invalid_certificates: AFNetworking's allowInvalidCertificates.
            validates_domain_name: AFNetworking's validatesDomainName.
            time: Unix seconds at which a pinned leaf's validity is checked (None: now).
            limits: ``max_certificate_bytes``, ``max_pem_bytes``, ``max_der_depth``,
                ``max_pins``, ``max_chain`` (``afs_security_limits``; missing: the
                defaults 1 MiB, 16 MiB, 32, 4096, 64). Set before the pins are added.
        """
        self._mode = PinningMode(mode)
        self._h = CHandle(lib.afs_security_policy_new(int(self._mode)),
                          lib.raw.afs_security_policy_free, "afs_security_policy")
        self._limits = dict(limits or {})
        if self._limits:
            lib.afs_security_policy_set_limits(self._h.get(), byref(_limits(self._limits)))
        for i, c in enumerate(pinned_certificates):
            data = _bytes(c, f"pinned_certificates[{i}]")
            try:
                lib.afs_security_policy_add_pinned_certificate(self._h.get(), data, len(data))
            except InvalidArgumentError as e:
                raise InvalidArgumentError(e.code, f"pinned_certificates[{i}]: {e.message}") from None
        pins = pinned_public_keys if isinstance(pinned_public_keys, str) else ";".join(pinned_public_keys)
        if pins:
            lib.afs_security_policy_add_pinned_public_key_sha256(self._h.get(), pins.encode("utf-8"))
        self._allows_invalid = bool(allows_invalid_certificates)
        self._validates_domain = bool(validates_domain_name)
        lib.afs_security_policy_set_allows_invalid_certificates(self._h.get(), self._allows_invalid)
        lib.afs_security_policy_set_validates_domain_name(self._h.get(), self._validates_domain)
        self._time = time
        if time is not None:
            lib.afs_security_policy_set_time(self._h.get(), int(time))

    @property
    def mode(self) -> PinningMode:
        return self._mode

    @property
    def allows_invalid_certificates(self) -> bool:
        return self._allows_invalid

    @property
    def validates_domain_name(self) -> bool:
        return self._validates_domain

    @property
    def time(self) -> Optional[int]:
        return self._time

    @property
    def limits(self) -> Dict[str, int]:
        """The limits set (a copy; missing names have their defaults)."""
        return dict(self._limits)

    def add_pinned_certificate(self, der_or_pem: CertificateBytes) -> None:
        """Pins a certificate (DER or PEM; every block of a PEM text)."""
        data = _bytes(der_or_pem, "der_or_pem")
        lib.afs_security_policy_add_pinned_certificate(self._h.get(), data, len(data))

    def add_pinned_public_keys(self, pins: str) -> None:
        """Adds ``"sha256//BASE64[;...]"`` pins; one malformed entry adds none."""
        lib.afs_security_policy_add_pinned_public_key_sha256(self._h.get(), pins.encode("utf-8"))

    def copy(self) -> "SecurityPolicy":
        new = SecurityPolicy.__new__(SecurityPolicy)
        new.__dict__.update(self.__dict__)
        ptr = lib.afs_security_policy_copy(self._h.get())
        if not ptr:
            raise MemoryError("afs_security_policy_copy failed")
        new._h = CHandle(ptr, lib.raw.afs_security_policy_free, "afs_security_policy")
        return new

    __copy__ = copy

    def close(self) -> None:
        self._h.close()

    def evaluate(self, chain: Sequence[Any], domain: Optional[str], chain_trusted: bool) -> None:
        """Decides (``afs_security_policy_evaluate``): returns when the server may be trusted,
        raises :class:`UntrustedError` (the rule, host and certificates named) otherwise.

        Args:
            chain: DER certificates, leaf first (bytes, or ``ssl`` certificate objects).
            domain: the host connected to; None: no domain check.
            chain_trusted: the TLS stack's verdict on the chain.
        """
        ders = [_bytes(c, f"chain[{i}]") for i, c in enumerate(chain)]
        n = len(ders)
        pointers = (c_void_p * max(n, 1))(*[ctypes.cast(ctypes.c_char_p(d), c_void_p) for d in ders])
        lengths = (c_size_t * max(n, 1))(*[len(d) for d in ders])
        host = domain.encode("utf-8") if domain is not None else None
        lib.afs_security_policy_evaluate(self._h.get(), pointers, lengths, n, host, bool(chain_trusted))

    def check_socket(self, ssl_socket: Any, domain: Optional[str] = None) -> str:
        """Evaluates the peer of a connected ``ssl.SSLSocket`` (or ``SSLObject``).

        The chain is ``get_verified_chain()`` (Python 3.13+; the same method of the private
        ``_sslobj`` on 3.10-3.12) when the context verified the peer, the chain the server
        sent otherwise (``get_unverified_chain``), or just the leaf
        (``getpeercert(binary_form=True)``) when neither method exists. ``chain_trusted`` is
        True exactly when the context verifies peers (``CERT_REQUIRED``): the handshake
        succeeded, since the socket is connected.

        Args:
            domain: the host to check; None: the socket's ``server_hostname``.
        Returns:
            which chain was used: ``"verified chain"``, ``"unverified chain"`` or ``"leaf only"``.
        Raises:
            UntrustedError: the policy refused the server (close the socket).
        """
        if domain is None:
            domain = getattr(ssl_socket, "server_hostname", None)
        trusted = ssl_socket.context.verify_mode == ssl.CERT_REQUIRED
        chain, source = peer_chain(ssl_socket, trusted)
        self.evaluate(chain, domain, trusted)
        return source

    def __repr__(self) -> str:
        return (f"SecurityPolicy({self._mode.name}, allows_invalid_certificates={self._allows_invalid}, "
                f"validates_domain_name={self._validates_domain})")


def peer_chain(ssl_socket: Any, trusted: bool) -> Tuple[List[bytes], str]:
    """The peer's chain (DER, leaf first) and where it came from (see ``check_socket``)."""
    name = "get_verified_chain" if trusted else "get_unverified_chain"
    for owner in (ssl_socket, getattr(ssl_socket, "_sslobj", None)):
        method = getattr(owner, name, None) if owner is not None else None
        if method is None:
            continue
        certs = method()
        if certs:
            return [_bytes(c, "chain") for c in certs], ("verified chain" if trusted else "unverified chain")
    leaf = ssl_socket.getpeercert(binary_form=True)
    if not leaf:
        raise UntrustedError(Status.UNTRUSTED, "the TLS peer sent no certificate")
    return [leaf], "leaf only"


# ------------------------------------------------------------------------------------------
# requests (urllib3 2.x): the policy runs in the connection's connect(), right after the TLS
# handshake and before the request is written.


def requests_adapter(policy: SecurityPolicy, **adapter_kwargs: Any) -> Any:
    """An ``requests.adapters.HTTPAdapter`` applying ``policy`` to every HTTPS connection
    right after its handshake: mount it with ``session.mount("https://", adapter)``. A refused
    server gets no request byte; the call raises :class:`UntrustedError`. The adapter's
    ``verify`` setting still decides whether ``ssl`` verifies the chain (``chain_trusted``)."""
    import requests.adapters
    from urllib3.connection import HTTPSConnection
    from urllib3.connectionpool import HTTPSConnectionPool

    class PolicyHTTPSConnection(HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            host = getattr(self, "server_hostname", None) or self.host
            try:
                policy.check_socket(self.sock, host.strip("[]"))
            except BaseException:
                self.close()
                raise

    class PolicyHTTPSConnectionPool(HTTPSConnectionPool):
        ConnectionCls = PolicyHTTPSConnection

    def install(manager: Any) -> Any:
        manager.pool_classes_by_scheme = dict(manager.pool_classes_by_scheme)
        manager.pool_classes_by_scheme["https"] = PolicyHTTPSConnectionPool
        return manager

    class PolicyAdapter(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            install(self.poolmanager)

        def proxy_manager_for(self, *args: Any, **kwargs: Any) -> Any:
            return install(super().proxy_manager_for(*args, **kwargs))

    adapter = PolicyAdapter(**adapter_kwargs)
    adapter.security_policy = policy  # type: ignore[attr-defined]
    return adapter


# ------------------------------------------------------------------------------------------
# httpx (httpcore 1.x): the network backend's start_tls is wrapped, so the policy runs right
# after the handshake and before the request is written.


def httpx_transport(policy: SecurityPolicy, **transport_kwargs: Any) -> Any:
    """An ``httpx.HTTPTransport`` applying ``policy`` right after each TLS handshake:
    ``httpx.Client(transport=afs.httpx_transport(policy))``. A refused server gets no request
    byte; the call raises :class:`UntrustedError`. ``verify=`` (passed through) still decides
    whether ``ssl`` verifies the chain."""
    import httpx

    class PolicyStream:
        def __init__(self, stream: Any) -> None:
            self._stream = stream

        def __getattr__(self, name: str) -> Any:
            return getattr(self._stream, name)

        def start_tls(self, ssl_context: Any, server_hostname: Optional[str] = None,
                      timeout: Optional[float] = None) -> Any:
            tls = self._stream.start_tls(ssl_context, server_hostname=server_hostname, timeout=timeout)
            sock = tls.get_extra_info("ssl_object")
            try:
                if sock is None:
                    raise UntrustedError(Status.UNTRUSTED, "the TLS stream has no ssl object to check")
                policy.check_socket(sock, server_hostname)
            except BaseException:
                tls.close()
                raise
            return tls

    class PolicyBackend:
        def __init__(self, backend: Any) -> None:
            self._backend = backend

        def __getattr__(self, name: str) -> Any:
            return getattr(self._backend, name)

        def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
            return PolicyStream(self._backend.connect_tcp(*args, **kwargs))

        def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            return PolicyStream(self._backend.connect_unix_socket(*args, **kwargs))

    class PolicyTransport(httpx.HTTPTransport):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            pool = self._pool
            backend = getattr(pool, "_network_backend", None)
            if backend is None:
                raise RuntimeError("httpx_transport: this httpcore has no _network_backend to wrap")
            pool._network_backend = PolicyBackend(backend)
            self.security_policy = policy

    return PolicyTransport(**transport_kwargs)
