"""memplan: a Python client for the memplan planning daemon.

``memplan.Client`` speaks the daemon's HTTP/JSON API with the standard
library only; importing this package does not import torch (the PyTorch
exporter lives in ``memplan.torch`` and is imported on its own).
"""

from .client import Client
from .errors import (AuthError, BusyError, ConflictError, MemplanError, NotFoundError, PlanCancelled, PlanFailed,
                     PlanTimeout, RequestError, ServerError, TransportError)

__version__ = "0.1.0"

__all__ = ["Client", "MemplanError", "RequestError", "AuthError", "NotFoundError", "ConflictError", "BusyError",
           "ServerError", "TransportError", "PlanFailed", "PlanCancelled", "PlanTimeout", "__version__"]
