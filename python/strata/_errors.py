"""The errors Strata's Python client raises: one line naming the problem, as the ``strata`` command says it."""


class StrataError(RuntimeError):
    """A failure Strata reports: one line naming the problem, as the ``strata`` command says it."""


class StrataUsageError(StrataError, ValueError):
    """Bad arguments: an unknown feature, a dataset without a sample index, a bad state."""


class StrataWarning(UserWarning):
    """Strata carries on in a degraded way (an unreachable node: reading from ORC)."""
