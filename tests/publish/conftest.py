"""Fixtures of the publishing tests: a store with the sample loaded, and a signing key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nanopub_sign
import pytest
from tests.conftest import SAMPLE, settings_for

from labbrain.core import LabBrain


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    """A store directory holding the sample export."""
    with LabBrain(settings_for(tmp_path / "store")) as brain:
        brain.load(str(SAMPLE))
    yield tmp_path / "store"


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An RSA private key in PEM, as the nanopub tools make one (made by nanopub-sign)."""
    path = tmp_path_factory.mktemp("key") / "id_rsa.pem"
    private = nanopub_sign.KeyPair().private  # base64 PKCS#8
    lines = [private[i : i + 64] for i in range(0, len(private), 64)]
    path.write_text(
        "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"
    )
    return path
