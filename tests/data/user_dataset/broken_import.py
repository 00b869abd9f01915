"""A user's module whose import fails: loaderbench names this file and line."""

import no_such_package_for_loaderbench  # noqa: F401


def make_dataset(root):
    return []
