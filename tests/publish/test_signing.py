"""Signing and checking nanopublications (labbrain.rdf.nanopub): the signatures are checked by
nanopub-sign called directly, and the checks against nanopublications made and tampered with
here."""

from __future__ import annotations

from pathlib import Path

import nanopub_sign
import pytest

from labbrain.errors import InvalidArgument
from labbrain.rdf import nanopub
from labbrain.rdf.nanopub import SigningKey, check, read_key, sign, sign_many

ORCID = "https://orcid.org/0000-0002-1825-0097"


def unsigned(n: int) -> str:
    """An unsigned nanopublication whose assertion says ``n``."""
    base = f"http://purl.org/nanopub/temp/test{n}/"
    return f"""
<{base}Head> {{
  <{base}> a <http://www.nanopub.org/nschema#Nanopublication> ;
    <http://www.nanopub.org/nschema#hasAssertion> <{base}assertion> ;
    <http://www.nanopub.org/nschema#hasProvenance> <{base}provenance> ;
    <http://www.nanopub.org/nschema#hasPublicationInfo> <{base}pubinfo> .
}}
<{base}assertion> {{ <https://example.org/claim> <http://www.w3.org/2000/01/rdf-schema#label> "claim {n}" . }}
<{base}provenance> {{ <{base}assertion> <http://www.w3.org/ns/prov#wasAttributedTo> <{ORCID}> . }}
<{base}pubinfo> {{
  <{base}> <http://purl.org/dc/terms/creator> <{ORCID}> ;
    <http://purl.org/dc/terms/created> "2026-11-29T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .
}}
"""


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> SigningKey:
    path = tmp_path_factory.mktemp("key") / "key.pem"
    private = nanopub_sign.KeyPair().private
    body = "\n".join(private[i : i + 64] for i in range(0, len(private), 64))
    path.write_text(f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n")
    return SigningKey(read_key(path), ORCID, "Josiah Carberry")


def library_uri(trig: str) -> str:
    """The URI nanopub-sign's own check gives a valid signed nanopublication."""
    info = nanopub_sign.Nanopub(trig).check().info()
    assert info["signature"] and info["trusty_hash"]
    return str(info["uri"]["value"])


def test_signing_gives_a_trusty_uri_the_library_accepts(key: SigningKey) -> None:
    done = sign(unsigned(1), key)
    assert done.uri.startswith("https://w3id.org/np/RA")
    assert library_uri(done.trig) == done.uri
    # RSA PKCS#1 v1.5 is deterministic: the same content and date give the same URI (the
    # library dates a nanopublication without dct:created itself, so every one is dated).
    assert sign(unsigned(1), key) == done


def test_a_batch_signed_in_child_processes_keeps_its_order(
    key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nanopub, "PARALLEL_FROM", 4)
    monkeypatch.setattr(nanopub.os, "cpu_count", lambda: 2)
    batch = [unsigned(n) for n in range(10)]
    done = sign_many(batch, key)
    assert [d.uri for d in done] == [sign(text, key).uri for text in batch]
    for item in done:
        assert library_uri(item.trig) == item.uri


def test_check_tells_valid_tampered_unsigned_and_broken_apart(
    key: SigningKey, capfd: pytest.CaptureFixture[str]
) -> None:
    good = sign(unsigned(2), key)
    tampered = good.trig.replace("claim 2", "claim 3")
    assert tampered != good.trig
    verdicts = check([good.trig, tampered, unsigned(4), "not TriG at all"])
    assert [(v.signed, v.valid, v.verified) for v in verdicts] == [
        (True, True, True),
        (True, False, False),
        (False, True, False),
        (False, False, False),
    ]
    assert verdicts[0].uri == good.uri
    assert "hash" in (verdicts[1].reason or "")
    # The library's verdicts are printed in the child, never on this process's stdout.
    assert capfd.readouterr().out == ""


def test_keys_the_library_cannot_use_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "key.pem"
    text.write_text("hello\n")
    with pytest.raises(InvalidArgument, match="no PEM private key"):
        read_key(text)
    with pytest.raises(InvalidArgument, match="cannot read"):
        read_key(tmp_path / "missing.pem")
    broken = SigningKey(
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", ORCID, "x"
    )
    with pytest.raises(InvalidArgument, match="nanopub-sign cannot use it"):
        sign(unsigned(5), broken)


def test_checking_more_verdicts_than_a_pipe_holds_answers() -> None:
    # 1,000 verdicts are far more than a pipe's 64 KiB: the answer is read while the child
    # writes it (it once waited for the child's exit first, and both waited for ever).
    verdicts = check([unsigned(n) for n in range(1000)])
    assert [v.uri for v in verdicts] == [
        f"http://purl.org/nanopub/temp/test{n}" for n in range(1000)
    ]
    assert all(v.valid and not v.signed for v in verdicts)
