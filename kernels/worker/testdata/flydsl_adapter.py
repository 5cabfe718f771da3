"""An adapter whose kernels need a package that is not installed (flydsl), so that the worker's
open must say which module is missing and how to install it."""
import flydsl  # noqa: F401  (absent: the point of this file)

DECLARATION = {"contract": 1, "ops": {"rotate": {}}}


def rotate(args, mem):
    return None
