"""Strata's Python client: the Java loader's batches in a Python job, zero-copy.

    import strata
    loader = strata.Loader("/data/events", features=["amount", "merchant_id"], batch_samples=512, seed=1)
    for batch in loader:          # a pyarrow.RecordBatch over shared memory
        ...
    state = loader.state_dict()   # exact mid-epoch resume with load_state_dict(state)

``strata.torch.StrataIterableDataset`` wraps it for ``torch.utils.data.DataLoader``.
"""

from ._errors import StrataError, StrataUsageError, StrataWarning
from ._loader import Loader

__all__ = ["Loader", "StrataError", "StrataUsageError", "StrataWarning"]
__version__ = "0.1.0"
