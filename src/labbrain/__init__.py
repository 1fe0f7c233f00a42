"""labbrain: a semantic-web knowledge server for research discourse graphs.

The library is the product: :class:`labbrain.core.LabBrain` opens a store and offers loading,
querying, search and export; the CLI, the MCP server and the HTTP endpoint are thin clients
of it.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("labbrain")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
