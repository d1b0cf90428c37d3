"""The llm agent over HTTPS: it checks the server's certificate against the trusted ones.

A stand-in server on loopback serves HTTPS with a certificate made here (``openssl``). The agent must
refuse it while the certificate is not trusted (a "cannot reach" error naming the failed check, as
for any server it cannot connect to; no request reaches the server) and play through it once
``SSL_CERT_FILE`` names it (the system's trust store, which ``ssl.create_default_context`` reads).
Skipped where no ``openssl`` command is installed.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest

from agents import make_agent
from agents.external.llm_client import LLMError
from agents.external.llm_standin import StandIn
from tests.llm.llm_support import batch

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="no openssl command to make a certificate")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """Return (certificate file, server context) of a self-signed certificate for 127.0.0.1."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return cert, ctx


@pytest.fixture
def https_standin(certificate):
    s = StandIn(tls=certificate[1])
    yield s
    s.close()


def test_the_agent_refuses_a_server_whose_certificate_is_not_trusted(https_standin, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    assert https_standin.url.startswith("https://")
    a = make_agent(f"llm:base_url={https_standin.url},model=legal,attempts=1,max_retries=0,timeout=10")
    obs, masks = batch(3, seed=2)
    with pytest.raises(LLMError, match="cannot reach https://127.0.0.1:.*CERTIFICATE_VERIFY_FAILED"):
        a.act_batch(obs, masks)
    assert a.usage.calls == 0 and https_standin.requests == 0


def test_the_agent_plays_through_a_server_whose_certificate_is_trusted(https_standin, certificate,
                                                                       monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    a = make_agent(f"llm:base_url={https_standin.url},model=legal,attempts=1,timeout=10")
    obs, masks = batch(3, seed=2)
    actions = a.act_batch(obs, masks)
    assert all(masks[i, actions[i]] for i in range(3))
    assert a.usage.forfeits == 0 and a.usage.first_try == 3 and https_standin.requests == 3


def test_the_trust_store_is_loaded_once_per_agent(https_standin, certificate, monkeypatch):
    """Loading the trust store costs tens of ms: an agent builds its TLS context once, not per batch."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    built = []
    real = ssl.create_default_context

    def counting(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    a = make_agent(f"llm:base_url={https_standin.url},model=legal,attempts=1,timeout=10")
    obs, masks = batch(2, seed=2)
    for _ in range(3):
        a.act_batch(obs, masks)
    assert len(built) == 1 and https_standin.requests == 6
