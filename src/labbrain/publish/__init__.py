"""Publishing the lab's graph in the community's standard forms: signed nanopublications of its
claims and relations (:mod:`~labbrain.publish.nanopub`), RO-Crate evidence bundles
(:mod:`~labbrain.publish.crate`), and the people map both name authors by
(:mod:`~labbrain.publish.people`)."""
