"""A user's step module whose import fails: loaderbench names this file and line."""

import no_such_package_for_loaderbench_steps  # noqa: F401


def make_step():
    return lambda batch: None
