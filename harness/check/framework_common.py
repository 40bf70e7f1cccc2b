# What nodebench's framework probe and bench (framework_probe.py, framework_bench.py) share: the
# one JSON object a script writes to its OUT.json (what it has so far, also when it fails) and the
# end of a script's run. nodebench embeds this file with them and writes it beside them, so that
# they import it as they do in this folder. Standard library only, Python 3.8 and newer.
import json
import os
import traceback

OUT = {}
OUT_PATH = None


def start(path, **first):
    """Where save() writes, and the object's first fields."""
    global OUT_PATH
    OUT_PATH = path
    OUT.update(first)


def save():
    tmp = OUT_PATH + ".tmp"
    with open(tmp, "w") as f:
        json.dump(OUT, f, default=str)
    os.replace(tmp, OUT_PATH)


def err_text(e):
    return ("%s: %s" % (type(e).__name__, e))[:2000]


def run_and_save(work, on_error=None):
    """Runs work(): a non-zero status it returns is the script's; an exception is a finding (an
    import that fails, a framework that raises, out of memory), recorded with its traceback (and
    what on_error adds) and the status 1; else the object is marked done, 0. Saved either way."""
    try:
        rc = work()
        if rc:
            return rc
    except BaseException as e:
        OUT["error"] = err_text(e)
        OUT["traceback"] = traceback.format_exc()[-4000:]
        if on_error:
            on_error()
        save()
        return 1
    OUT["done"] = True
    save()
    return 0
