"""TAP output for every Python test, the counterpart of tap.sh.

Results are printed as they happen, so that a test that hangs shows how
far it got, and the plan ("1..N") comes last, as TAP allows, unless a
registry of test functions printed it first. A failed result carries its
details as comment lines. The program's exit status is done()'s: 0 when
nothing failed.

Two ways to write a test, mixed as needed:
  - ok(cond, name, detail) for each check, then sys.exit(done());
  - Tests: functions registered with @tests.test, each one result, failing
    on an exception (cloudtest.check raises AssertionError), run with
    sys.exit(tests.run(setup, teardown)).
"""

import sys
import traceback

_n = 0
_failed = 0
_planned = None


def _print(line):
    print(line, flush=True)


def comment(msg):
    """Prints each line of msg as a TAP comment."""
    for line in str(msg).splitlines() or [""]:
        _print("# " + line)


def ok(cond, name, detail=""):
    """One result: 'ok' when cond is true, else 'not ok' followed by the
    detail as comments. Returns whether it passed."""
    global _n, _failed
    _n += 1
    good = bool(cond)
    if not good:
        _failed += 1
    _print("%s %d - %s" % ("ok" if good else "not ok", _n, name))
    if not good and detail not in ("", None):
        for line in str(detail).splitlines():
            _print("#   " + line)
    return good


def skip(name, why):
    """One result that could not be checked here, and why."""
    global _n
    _n += 1
    _print("ok %d - %s # SKIP %s" % (_n, name, why))


def skip_all(why):
    """Nothing of this test can run here: says why and exits."""
    _print("1..0 # SKIP " + why)
    sys.exit(0)


def failed():
    """How many results failed so far."""
    return _failed


def plan(n):
    """Announces n results up front (optional)."""
    global _planned
    _planned = n
    _print("1..%d" % n)


def done():
    """Prints the plan unless it was announced, and returns the exit
    status: 0 when every result passed and as many as planned came."""
    if _planned is None:
        _print("1..%d" % _n)
    elif _planned != _n:
        comment("planned %d results, ran %d" % (_planned, _n))
        return 1
    return 1 if _failed else 0


class Tests:
    """A registry of test functions, each one result named by its
    docstring (or its name)."""

    def __init__(self):
        self.tests = []

    def test(self, fn):
        self.tests.append(fn)
        return fn

    def run(self, setup=None, teardown=None):
        """Runs each test with a fresh setup() context, teardown(ctx)
        after it whatever happened; returns done()."""
        plan(_n + len(self.tests))
        for fn in self.tests:
            ctx = setup() if setup else None
            try:
                fn(ctx)
                ok(True, fn.__doc__ or fn.__name__)
            except Exception:
                ok(False, fn.__doc__ or fn.__name__, traceback.format_exc())
            finally:
                if teardown:
                    teardown(ctx)
        return done()
