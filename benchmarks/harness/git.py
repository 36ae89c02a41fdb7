"""What git knows about a file of the repository."""

import subprocess
from pathlib import Path
from typing import Optional, Union


def last_commit_date(path: Union[str, Path]) -> Optional[str]:
    """The day (YYYY-MM-DD) of the last commit that changed `path`, or None outside git."""
    path = Path(path)
    try:
        process = subprocess.run(
            ["git", "log", "-1", "--format=%as", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return process.stdout.strip() or None
