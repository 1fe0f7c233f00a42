"""``python -m labbrain`` runs the command-line interface."""

from labbrain.cli import main

main()
