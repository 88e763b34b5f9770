"""Read pip's resolved install plan (`pip install --dry-run --report FILE ...`) and say whether it pulls CUDA.

    python scripts/install_plan.py FILE          # one line: what the plan installs; exit 1 if it pulls CUDA
    python scripts/install_plan.py FILE --torch  # print only the planned torch version (empty if none)

scripts/setup.sh runs every install through this check on a machine without a GPU, so a CPU machine never
downloads the CUDA toolkit, cuDNN or NCCL (PyPI's torch for Linux x86_64 depends on them: several GB).
A package counts as CUDA when its name starts with `nvidia-` or `cuda-`, is `triton` (CUDA torch's compiler), or
when torch itself is a CUDA build (a `+cuXXX` local version).
"""
from __future__ import annotations

import json
import re
import sys
from urllib.parse import unquote, urlsplit

CUDA_NAME = re.compile(r"^(nvidia[-_]|cuda[-_]|triton$)", re.IGNORECASE)


def planned(report: dict) -> list[tuple[str, str, str]]:
    """(name, version, url) of every package the plan installs."""
    return [(i["metadata"]["name"], i["metadata"]["version"], (i.get("download_info") or {}).get("url", ""))
            for i in report.get("install", [])]


def cuda_packages(report: dict) -> list[str]:
    return [f"{n}=={v}" for n, v, _ in planned(report)
            if CUDA_NAME.match(n) or (n.lower() == "torch" and "+cu" in v)]


def source(url: str) -> str:
    """Where a file comes from, short: the folder of a local file, the host of a remote one."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        return unquote(parts.path).rsplit("/", 1)[0] or "/"
    return parts.netloc or "an index"


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    with open(argv[0], encoding="utf-8") as f:
        report = json.load(f)
    pkgs = planned(report)
    if "--torch" in argv[1:]:
        print(next((v for n, v, _ in pkgs if n.lower() == "torch"), ""))
        return 0
    cuda = cuda_packages(report)
    torch = next(((v, u) for n, v, u in pkgs if n.lower() == "torch"), None)
    where = f"torch {torch[0]} from {source(torch[1])}; " if torch else ""
    listed = ", ".join(cuda[:4]) + (f" and {len(cuda) - 4} more" if len(cuda) > 4 else "")
    print(f"{len(pkgs)} package(s) to install ({where}CUDA packages: {listed or 'none'})")
    return 1 if cuda else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
