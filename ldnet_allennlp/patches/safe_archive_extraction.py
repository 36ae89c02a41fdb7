"""
**Replaces**: the two places where AllenNLP 2.10.1 and its `cached_path` extract a tar archive,
both with `check_archive_members` run over every member before anything is extracted, and
Python's tarfile `data` filter on the extraction itself:

- `allennlp.models.archival.extracted_archive` (`archive.extractall(tempdir)`, no member check),
  with `safe_extracted_archive`. `load_archive` calls it, so this covers every model archive that
  AllenNLP or we open: `allennlp predict` / `evaluate` / `train` with a pretrained archive,
  `Predictor.from_path`, the LM archives of both LM-feature embedders (`load_dense_lm`),
  `ldnet-prune`, the distillation teacher (`distillation_student.teacher_archive`,
  `ldnet-distill-transfer-set`); AllenNLP's `PretrainedModelInitializer` too. It also removes its
  temporary directory when the extraction fails (AllenNLP's leaks it: `load_archive` asks for
  `cleanup=False` and only learns the directory's name once the extraction has succeeded).
- `cached_path._cached_path.check_tarfile`, the check `cached_path(..., extract_archive=True)`
  (and the `archive.tar.gz!member` syntax) runs before its `tar_file.extractall(...)`, with
  `check_cached_path_tarfile`: our check, which also sets that `TarFile`'s `extraction_filter`
  to the `data` filter for the extraction that follows. cached_path's own check misses a member
  such as `../pathtestX/file` (it compares path prefixes as strings) and has no size limit.

A member is refused, with a `ConfigurationError` (`UnsafeArchiveError`) that names the archive
file and the member, when it has an absolute path, a `..` component, would be written through a
symlink of the archive, is a symlink or hard link whose target is absolute, outside the archive
or reached through another symlink, or is a device file or FIFO; and the archive is refused when
its members add up to more than `LDNET_MAX_ARCHIVE_BYTES` bytes (default 4 GiB; our largest
archives, a tagger holding both pretrained LMs, are about 36 MB extracted), counted from the tar
headers before anything is written, so a compressed bomb never fills the disk. The `data`
filter on the extraction is a second line: a member that it refuses stops the extraction inside
the temporary directory, which is then deleted.

Only these two call sites change: `tarfile.TarFile.extractall` itself is untouched, so other
code in the process that extracts tar files (trusted or not) behaves as before.
`allennlp.tools.archive_surgery` (a script run as `python -m`, without plugins) is not covered.

**Why**: Python 3.11's tarfile trusts member names unless a filter is given, so a
`model.tar.gz` with a member `../../../../home/user/.bashrc`, an absolute member or a symlink
member pointing outside was loaded by `allennlp predict` and wrote that file outside its
temporary directory. An archive is data, never code. (A `weights.th` carrying a
malicious pickle is refused by torch's `weights_only` loading, `torch_safe_globals`.)

**Targets**: AllenNLP 2.10.1, cached-path 1.1.6, Python >= 3.11.4 (`tarfile.data_filter`; on an
older Python every archive is refused with an error that says so).
**Remove when**: AllenNLP's `load_archive` and cached_path extract with the `data` filter and a
size limit (never for AllenNLP: it is archived).
**Test**: `tests/patches/safe_archive_extraction_test.py` (and `tests/archive_safety_test.py`:
every loading path of the package, the CLI included).
"""

import importlib
import logging
import os
import posixpath
import shutil
import tarfile
import tempfile
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Set

from allennlp.common.checks import ConfigurationError
from allennlp.models import archival

logger = logging.getLogger(__name__)

MAX_ARCHIVE_BYTES_VARIABLE = "LDNET_MAX_ARCHIVE_BYTES"
DEFAULT_MAX_ARCHIVE_BYTES = 4 * 1024**3

ALLENNLP_EXTRACTED_ARCHIVE = archival.extracted_archive
_cached_path_module = importlib.import_module("cached_path._cached_path")
CACHED_PATH_CHECK_TARFILE = _cached_path_module.check_tarfile


class UnsafeArchiveError(ConfigurationError):
    """An archive refused before extraction: a member that could write outside, or too big."""


def max_archive_bytes() -> int:
    """The limit on an archive's extracted size: `LDNET_MAX_ARCHIVE_BYTES`, read at each call."""
    value = os.environ.get(MAX_ARCHIVE_BYTES_VARIABLE, "").strip()
    if not value:
        return DEFAULT_MAX_ARCHIVE_BYTES
    try:
        limit = int(value)
    except ValueError:
        limit = 0
    if limit < 1:
        raise ConfigurationError(
            f"{MAX_ARCHIVE_BYTES_VARIABLE} must be a positive whole number of bytes "
            f"(default {DEFAULT_MAX_ARCHIVE_BYTES}), got {value!r}."
        )
    return limit


def _parts(path: str) -> List[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def _through_symlink(parts: List[str], symlinks: Set[str]) -> Optional[str]:
    """
    The first symlink of the archive that the relative path `parts` goes through as a directory
    (followed by another component, `..` included), or None. `..` that leaves the archive is
    left to the caller (`data_filter` refuses it).
    """
    stack: List[str] = []
    for part in parts:
        if stack and "/".join(stack) in symlinks:
            return "/".join(stack)
        if part == "..":
            if stack:
                stack.pop()
        else:
            stack.append(part)
    return None


def member_problem(member: tarfile.TarInfo, destination: str, symlinks: Set[str]) -> Optional[str]:
    """Why `member` may not be extracted into `destination` (None when it may)."""
    name = member.name
    if name.startswith("/") or os.path.isabs(name):
        return "has an absolute path"
    parts = _parts(name)
    if ".." in parts:
        return "has a '..' component"
    if (
        member.ischr()
        or member.isblk()
        or member.isfifo()
        or not (member.isreg() or member.isdir() or member.issym() or member.islnk())
    ):
        return "is a device file or FIFO (only files, folders and links inside are extracted)"
    through = _through_symlink(parts, symlinks)
    if through is not None:
        return f"would be written through the symlink {through!r}"
    if member.issym() or member.islnk():
        kind = "symlink" if member.issym() else "hard link"
        if member.linkname.startswith("/") or os.path.isabs(member.linkname):
            return f"is a {kind} to the absolute path {member.linkname!r}"
        target = (
            _parts(posixpath.dirname(name)) if member.issym() else []
        ) + member.linkname.split("/")
        through = _through_symlink([part for part in target if part not in ("", ".")], symlinks)
        if through is not None:
            return f"is a {kind} to {member.linkname!r}, through the symlink {through!r}"
    try:
        tarfile.data_filter(member, destination)
    except tarfile.FilterError as error:
        return f"is refused by tarfile's data filter: {error}"
    return None


def check_archive_members(
    archive: tarfile.TarFile, archive_path: str, destination: str
) -> List[tarfile.TarInfo]:
    """
    Checks every member of `archive` (read from `archive_path`) for extraction into
    `destination` before anything is written; raises `UnsafeArchiveError` naming the archive and
    the first offending member, or the total size. Returns the members.
    """
    if not hasattr(tarfile, "data_filter"):
        raise UnsafeArchiveError(
            f"Refusing to extract {archive_path}: safe extraction needs Python >= 3.11.4 "
            "(tarfile.data_filter)."
        )
    members = archive.getmembers()
    symlinks = {"/".join(_parts(member.name)) for member in members if member.issym()}
    limit = max_archive_bytes()
    file_sizes: Dict[str, int] = {}
    total = 0
    for member in members:
        problem = member_problem(member, destination, symlinks)
        if problem is not None:
            raise UnsafeArchiveError(
                f"Refusing to extract the archive {archive_path}: its member {member.name!r} "
                f"{problem}. Nothing was extracted. An archive may only hold files and folders "
                "inside itself; do not load archives from sources you do not trust."
            )
        if member.isreg():
            file_sizes["/".join(_parts(member.name))] = member.size
            total += member.size
        elif member.islnk():  # extracted as a copy where hard links are not supported
            total += file_sizes.get("/".join(_parts(member.linkname)), 0)
        if total > limit:
            raise UnsafeArchiveError(
                f"Refusing to extract the archive {archive_path}: its members add up to more "
                f"than {limit} bytes (the limit {MAX_ARCHIVE_BYTES_VARIABLE}; reached at member "
                f"{member.name!r}, {total} bytes so far). Nothing was extracted. If you trust "
                f"this archive, set {MAX_ARCHIVE_BYTES_VARIABLE} to a larger number of bytes."
            )
    return members


def data_filter_naming(archive_path: str):
    """
    tarfile's `data` filter, raising `UnsafeArchiveError` (which stops the extraction) instead of
    tarfile's `FilterError`: the second line behind `check_archive_members`.
    """

    def data_filter(member: tarfile.TarInfo, destination: str) -> tarfile.TarInfo:
        try:
            return tarfile.data_filter(member, destination)
        except tarfile.FilterError as error:
            raise UnsafeArchiveError(
                f"Refusing to extract the archive {archive_path}: its member {member.name!r} "
                f"is refused by tarfile's data filter: {error}. An archive may only hold files "
                "and folders inside itself."
            ) from error

    return data_filter


def extract_archive_safely(archive_path: str, destination: str, mode: str = "r:gz") -> None:
    """Extracts `archive_path` into `destination`: our member check, then the `data` filter."""
    with tarfile.open(archive_path, mode) as archive:
        members = check_archive_members(archive, archive_path, destination)
        archive.extractall(destination, members=members, filter=data_filter_naming(archive_path))


@contextmanager
def safe_extracted_archive(resolved_archive_file, cleanup: bool = True) -> Iterator[str]:
    """
    AllenNLP's `extracted_archive`, extracting safely (`extract_archive_safely`); its
    temporary directory is deleted when the extraction fails, whatever `cleanup` says.
    """
    tempdir = tempfile.mkdtemp()
    logger.info(f"extracting archive file {resolved_archive_file} to temp dir {tempdir}")
    try:
        extract_archive_safely(str(resolved_archive_file), tempdir)
    except BaseException:
        shutil.rmtree(tempdir, ignore_errors=True)
        raise
    try:
        yield tempdir
    finally:
        if cleanup:
            logger.info(f"removing temporary unarchived model dir at {tempdir}")
            shutil.rmtree(tempdir, ignore_errors=True)


def check_cached_path_tarfile(tar_file: tarfile.TarFile) -> None:
    """
    cached_path's `check_tarfile(tar_file)`, run before its `tar_file.extractall(tmp_dir)`:
    our member check (against a destination that does not exist yet: nothing is extracted
    before the check), then the `data` filter for that extraction.
    """
    destination = os.path.join(
        os.path.realpath(tempfile.gettempdir()), "ldnet-archive-check-not-created"
    )
    try:
        check_archive_members(tar_file, str(tar_file.name), destination)
    except BaseException:
        tar_file.close()  # cached_path only closes it after a successful extraction
        raise
    tar_file.extraction_filter = data_filter_naming(str(tar_file.name))


def apply() -> None:
    """Idempotent: always replaces AllenNLP's / cached_path's own function with ours."""
    archival.extracted_archive = safe_extracted_archive
    _cached_path_module.check_tarfile = check_cached_path_tarfile
