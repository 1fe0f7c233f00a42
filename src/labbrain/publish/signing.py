"""Who signs a publication: the key file and the signer, named by ORCID iD or by a name of
the people map."""

from __future__ import annotations

from labbrain.core import LabBrain
from labbrain.errors import InvalidArgument
from labbrain.publish.people import People, orcid_iri
from labbrain.rdf.nanopub import SigningKey, read_key


def signing_key(brain: LabBrain, key_file: str, signer: str) -> SigningKey:
    """The signing key in ``key_file`` for ``signer``: an ORCID iD (bare or as its IRI), or a
    name the people map resolves (its display name goes into the signature's profile).

    Raises InvalidArgument when the key cannot be read or the signer is neither."""
    people = People(brain.store)
    try:
        orcid = orcid_iri(signer)
    except InvalidArgument:
        found = people.orcid(signer)
        if found is None:
            raise InvalidArgument(
                "signer",
                f"{signer!r} is neither an ORCID iD nor a name of the people map "
                '(labbrain people set "NAME" ORCID)',
            ) from None
        return SigningKey(read_key(key_file), found, " ".join(signer.split()))
    names = [name for name, iri in people.all().items() if iri == orcid]
    return SigningKey(read_key(key_file), orcid, names[0] if names else orcid)
