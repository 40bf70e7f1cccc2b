"""Result files as the developer scripts read them: plain JSON or gzip-compressed (.json.gz, as the
larger committed runs are kept); and a plain copy for nodebench_cost_probe, which reads JSON only."""
import contextlib
import gzip
import json
import os
import shutil
import tempfile


def load(path):
    """The document of a result file, .json or .json.gz. Raises OSError or ValueError."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def stem(path):
    """The file's name without .json / .json.gz."""
    name = os.path.basename(path)
    for ext in (".gz", ".json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    return name


@contextlib.contextmanager
def plain(path):
    """The path of a plain-JSON copy of a result file (the file itself when it is not compressed)."""
    if not path.endswith(".gz"):
        yield path
        return
    fd, tmp = tempfile.mkstemp(prefix="nb_result_", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as src:
            shutil.copyfileobj(src, out)
        yield tmp
    finally:
        os.unlink(tmp)
