"""Strata's Python client: the Java loader's batches in a Python job, zero-copy.

    import strata
    loader = strata.Loader("/data/events", features=["amount", "merchant_id"], batch_samples=512, seed=1)
    for batch in loader:          # a pyarrow.RecordBatch over shared memory
        ...
    state = loader.state_dict()   # exact mid-epoch resume with load_state_dict(state)

``strata.torch.StrataIterableDataset`` wraps it for ``torch.utils.data.DataLoader``.
``strata.Documents`` looks one feature's values up by sample id from the SSD tier, in-process.
"""

from ._documents import Documents
from ._errors import StrataError, StrataUsageError, StrataWarning

__all__ = ["Documents", "Loader", "StrataError", "StrataUsageError", "StrataWarning"]
__version__ = "0.1.0"


def __getattr__(name):
    # The loader (numpy, pyarrow) is imported when first named: a job that only looks documents
    # up (strata.Documents, the standard library alone) does not carry either.
    if name == "Loader":
        from ._loader import Loader

        return Loader
    raise AttributeError("module 'strata' has no attribute %r" % name)
