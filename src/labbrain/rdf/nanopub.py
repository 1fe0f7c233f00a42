"""Signing and checking nanopublications with the Rust nanopub library (``nanopub-sign``).

:func:`sign` turns an unsigned nanopublication (TriG, in the temporary namespace
``http://purl.org/nanopub/temp/...``) into a signed one with a trusty URI; RSA PKCS#1 v1.5
signatures are deterministic, so the same content, key and dates give the same URI.
:func:`check` asks the same library whether nanopublications are well formed and whether
their trusty hash and signature hold. The library prints its verdicts on file descriptor 1,
which in ``labbrain mcp`` is the protocol's stream: checks run in a child process whose
standard output is discarded, and its answers come back through a pipe of their own.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labbrain.errors import InputError, InvalidArgument
from labbrain.rdf.namespaces import CITO, DG, KPXL

#: The class the nanopub community's claim and evidence templates give each core node class
#: (the node types of the Discourse Graphs team's nanopub port); a Result has none.
COMMUNITY_CLASSES: dict[str, str] = {
    DG + "Claim": KPXL + "Claim",
    DG + "Evidence": KPXL + "Evidence",
    DG + "Question": KPXL + "Question",
}
#: The CiTO stance a relation of these core properties states.
CITO_STANCES: dict[str, str] = {
    DG + "supports": CITO + "supports",
    DG + "opposes": CITO + "disputes",
}

#: Longest time the checking child may take per nanopublication (plus a second to start).
CHECK_SECONDS_PER_NANOPUB = 2.0

_PEM_MARKERS = ("-----BEGIN PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----")


@dataclass(frozen=True)
class SigningKey:
    """Who signs: an RSA private key (PEM text, PKCS#8 or PKCS#1) and the ORCID iD IRI and
    name that go into each signature's pubinfo."""

    private_key: str
    orcid: str
    name: str


@dataclass(frozen=True)
class Signed:
    """A signed nanopublication: its trusty URI and its TriG text."""

    uri: str
    trig: str


@dataclass(frozen=True)
class Checked:
    """nanopub-sign's verdict on one nanopublication.

    ``signed``: it carries a signature and a trusty URI. ``valid``: the library accepted its
    structure, and (when signed) its trusty hash and signature. ``reason``: why not, in the
    library's words."""

    uri: str
    signed: bool
    valid: bool
    reason: str | None = None

    @property
    def verified(self) -> bool:
        """Signed, and the signature and trusty hash hold."""
        return self.signed and self.valid


def read_key(path: str | Path) -> str:
    """The PEM text of the RSA private key in ``path``.

    Raises InvalidArgument when the file cannot be read or holds no PEM private key (the nanopub
    tools keep theirs in ``~/.nanopub/id_rsa``)."""
    try:
        text = Path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidArgument("key", f"cannot read {path}: {error}") from None
    if not any(marker in text for marker in _PEM_MARKERS):
        raise InvalidArgument(
            "key",
            f"{path} holds no PEM private key; make one with: "
            "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out KEY.pem",
        )
    return text


def sign(trig: str, key: SigningKey) -> Signed:
    """Sign one unsigned nanopublication; the result's URI is its trusty URI.

    Raises InvalidArgument when the library cannot use the key, InputError when it refuses
    the nanopublication (its message says why)."""
    return sign_many([trig], key)[0]


def sign_many(trigs: Sequence[str], key: SigningKey) -> list[Signed]:
    """Sign each unsigned nanopublication, in order (see :func:`sign`).

    The library holds the interpreter while it signs (about 6 ms each with a 2048-bit key), so
    a batch of at least :data:`PARALLEL_FROM` is shared among one child process per core
    (each parses the key once); a smaller one is signed here."""
    workers = min(os.cpu_count() or 1, 8)
    profile = _profile(key)  # a key the library cannot use is said here, not in a child
    if len(trigs) < PARALLEL_FROM or workers < 2:
        return [_sign_with(profile, trig) for trig in trigs]
    context = multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )
    chunk = max(1, len(trigs) // (workers * 4))
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_signer, initargs=(key,)
    ) as pool:
        return list(pool.map(_sign_here, trigs, chunksize=chunk))


#: Batches at least this large are signed in child processes (:func:`sign_many`).
PARALLEL_FROM = 1000

_signer: Any = None


def _profile(key: SigningKey) -> Any:
    """nanopub-sign's profile of ``key`` (InvalidArgument when it cannot use it)."""
    import nanopub_sign

    try:
        return nanopub_sign.NpProfile(key.private_key, key.orcid, key.name, None)
    except Exception as error:  # the library raises plain Exception
        raise InvalidArgument("key", f"nanopub-sign cannot use it: {error}") from None


def _sign_with(profile: Any, trig: str) -> Signed:
    import nanopub_sign

    try:
        signed = nanopub_sign.Nanopub(trig).sign(profile)
    except Exception as error:
        raise InputError(f"nanopub-sign refused to sign a nanopublication: {error}") from None
    return Signed(uri=str(signed.info()["uri"]["value"]), trig=str(signed.rdf()))


def _start_signer(key: SigningKey) -> None:
    """A signing child's start: the key parsed once."""
    global _signer
    _signer = _profile(key)


def _sign_here(trig: str) -> Signed:
    """Sign in a signing child (:func:`_start_signer` ran)."""
    return _sign_with(_signer, trig)


def check(nanopubs: Sequence[str]) -> list[Checked]:
    """nanopub-sign's verdict on each nanopublication (TriG text of exactly one each), in order.

    Runs in a child process: the library prints on file descriptor 1, which the child points
    at /dev/null, answering on its original standard output, read here while it runs (however
    many verdicts). Raises InputError when the child fails or takes longer than
    :data:`CHECK_SECONDS_PER_NANOPUB` each."""
    if not nanopubs:
        return []
    limit = 1.0 + CHECK_SECONDS_PER_NANOPUB * len(nanopubs)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "labbrain.rdf.nanopub"],
            input=json.dumps(list(nanopubs)).encode("utf-8"),
            capture_output=True,
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise InputError(
            f"checking the nanopublications' signatures took longer than {limit:.0f} s"
        ) from None
    if done.returncode != 0 or not done.stdout:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no answer"]
        raise InputError(f"checking the nanopublications' signatures failed: {detail[0]}")
    return [Checked(**row) for row in json.loads(done.stdout)]


def _check_one(trig: str) -> Checked:
    """The library's verdict on one nanopublication (in the checking child)."""
    import nanopub_sign

    try:
        info = nanopub_sign.Nanopub(trig).info()
    except Exception as error:
        return Checked(uri="", signed=False, valid=False, reason=_said(error))
    uri = str(info["uri"]["value"])
    signed = bool(info.get("signature")) and bool(info.get("trusty_hash"))
    try:
        nanopub_sign.Nanopub(trig).check()
    except Exception as error:
        return Checked(uri=uri, signed=signed, valid=False, reason=_said(error))
    return Checked(uri=uri, signed=signed, valid=True)


def _said(error: BaseException) -> str:
    """The library's message in one line."""
    return " ".join(str(error).split()) or type(error).__name__


def _child() -> None:
    """Check the nanopublications read as JSON on stdin; answer on the original stdout, with
    file descriptor 1 (where the library prints) pointed at /dev/null."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    nanopubs = json.loads(sys.stdin.buffer.read())
    verdicts = [_check_one(trig).__dict__ for trig in nanopubs]
    with answers:
        json.dump(verdicts, answers)


if __name__ == "__main__":  # the checking child of :func:`check`
    _child()
